"""Writes the models of docs/errors.md's TFLite entries after E-TFLITE-OPERATOR:
one line per case, "NAME BASE64" (the zlib-compressed .tflite bytes the entry's
py block decompresses).  Each model is small and wrong in one way.  Needs flatc
and the venv of tests/tflite/venv.sh (flatbuffers, numpy):
    VENV/bin/python tests/tflite/errors_gen.py"""
import base64
import os
import sys
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflbuild import Model, mod, FLOAT32, INT32, INT8, OPS  # noqa: E402

class M(Model):
    def tensor(self, name, shape, ttype=FLOAT32, data=None, scale=None, zp=None, qdim=0, raw=None, **extra):
        t = super().tensor(name, shape, ttype, None if raw is not None else data, scale, zp, qdim)
        if raw is not None:
            self.buffers.append(raw); self.tensors[t]["buffer"] = len(self.buffers) - 1
        self.tensors[t].update(extra)
        return t
    def _quant(self, b, t):
        if not t.get("custom_quant"):
            return super()._quant(b, t)
        Q = mod("QuantizationParameters"); CQ = mod("CustomQuantization"); QD = mod("QuantizationDetails")
        cv = self._vec(b, lambda b_, n: CQ.CustomQuantizationStartCustomVector(b_, n), [1, 2], b.PrependUint8)
        CQ.CustomQuantizationStart(b); CQ.CustomQuantizationAddCustom(b, cv); c = CQ.CustomQuantizationEnd(b)
        Q.QuantizationParametersStart(b)
        Q.QuantizationParametersAddDetailsType(b, QD.QuantizationDetails.CustomQuantization)
        Q.QuantizationParametersAddDetails(b, c)
        return Q.QuantizationParametersEnd(b)
    def _tensor(self, b, t):
        T = mod("Tensor")
        name = b.CreateString(t["name"])
        shape = None if t.get("noshape") else self._ivec(b, t["shape"], lambda b_, n: T.TensorStartShapeVector(b_, n))
        sig = self._ivec(b, t["sig"], lambda b_, n: T.TensorStartShapeSignatureVector(b_, n)) if t.get("sig") else None
        sp = None
        if t.get("sparse"):
            SP = mod("SparsityParameters"); SP.SparsityParametersStart(b); sp = SP.SparsityParametersEnd(b)
        q = self._quant(b, t) if (t["scale"] is not None or t.get("custom_quant")) else None
        T.TensorStart(b)
        if shape is not None: T.TensorAddShape(b, shape)
        T.TensorAddType(b, t["type"]); T.TensorAddBuffer(b, t["buffer"]); T.TensorAddName(b, name)
        if q is not None: T.TensorAddQuantization(b, q)
        if sp is not None: T.TensorAddSparsity(b, sp)
        if sig is not None: T.TensorAddShapeSignature(b, sig)
        return T.TensorEnd(b)

W = lambda *s: np.arange(np.prod(s), dtype=np.float32).reshape(s) / 10
cases = {}
def case(name):
    def d(f): cases[name] = f; return f
    return d

def fc(wkw=dict(), xshape=(1, 4), bias=None, opts=None, wshape=(2, 4), out=(1, 2)):
    m = M(); x = m.tensor("x", xshape)
    kw = dict(wkw); 
    if "data" not in kw and "raw" not in kw: kw["data"] = W(*wshape)
    w = m.tensor("w", wshape, **kw); ins = [x, w]
    if bias is not None: ins.append(m.tensor("b", [len(bias)], data=bias))
    y = m.tensor("y", out); m.op(OPS["FULLY_CONNECTED"], ins, [y], opts); return m.build([x], [y])

def unary(op="RELU", xkw=dict(), ykw=dict(), xshape=(1, 4), yshape=(1, 4), ins=None, outs=None, opts=None):
    m = M(); x = m.tensor("x", xshape, **xkw); y = m.tensor("y", yshape, **ykw)
    m.op(OPS[op], [x] if ins is None else ins, [y] if outs is None else outs, opts); return m.build([x], [y])

case("input_index")(lambda: unary(ins=[7]))
case("input_missing")(lambda: unary("ADD"))
def cq():
    m = M(); x = m.tensor("x", [1, 4]); c = m.tensor("c", [1, 4], data=np.ones((1, 4)), custom_quant=True)
    y = m.tensor("y", [1, 4]); m.op(OPS["ADD"], [x, c], [y]); return m.build([x], [y])
case("custom_quant")(cq)
case("scales_dim")(lambda: fc(dict(ttype=INT8, data=np.ones((2, 4)), scale=[1, 1, 1], zp=[0, 0, 0])))
case("zp_count")(lambda: fc(dict(ttype=INT8, data=np.ones((2, 4)), scale=[1, 1], zp=[0, 0, 0])))
case("scale_neg")(lambda: fc(dict(ttype=INT8, data=np.ones((2, 4)), scale=-1.0, zp=0)))
case("const_type")(lambda: fc(dict(ttype=6, raw=bytes(8))))
case("buffer_size")(lambda: fc(dict(raw=bytes(28))))
case("nan")(lambda: fc(dict(raw=np.array([np.nan] * 8, np.float32).tobytes())))
case("act_perchannel")(lambda: unary(xkw=dict(ttype=INT8, scale=[0.1] * 4, zp=[0] * 4, qdim=1)))
case("act_zp")(lambda: unary(xkw=dict(ttype=INT8, scale=0.1, zp=300)))
case("requant")(lambda: unary("QUANTIZE", xkw=dict(ttype=INT8, scale=0.1, zp=0), ykw=dict(ttype=INT8, scale=0.2, zp=0)))
case("out_count")(lambda: unary(yshape=(1, 5)))
def twice():
    m = M(); x = m.tensor("x", [1, 4]); y = m.tensor("y", [1, 4])
    m.op(OPS["RELU"], [x], [y]); m.op(OPS["RELU6"], [x], [y]); return m.build([x], [y])
case("twice")(twice)
case("read_before")(lambda: unary(ins=[1]))
case("input_type")(lambda: unary(xkw=dict(ttype=INT32)))
case("input_shape")(lambda: unary(xshape=(1, 0)))
def noout():
    m = M(); x = m.tensor("x", [1, 4]); y = m.tensor("y", [1, 4]); m.op(OPS["RELU"], [x], [y]); return m.build([x], [])
case("no_outputs")(noout)
def badcode():
    m = M(); x = m.tensor("x", [1, 4]); y = m.tensor("y", [1, 4]); m.op(OPS["RELU"], [x], [y]); m.ops[0]["code"] = 5
    return m.build([x], [y])
case("opcode")(badcode)
case("fused_act")(lambda: unary("ADD", ins=[0, 0], opts=("AddOptions", dict(fused_activation_function=2))))
case("out_index")(lambda: unary(outs=[9]))
case("not_const")(lambda: (lambda m: (m.op(OPS["FULLY_CONNECTED"], [0, 1], [2]), m.build([0, 1], [2]))[1])(
    (lambda m: (m.tensor("x", [1, 4]), m.tensor("w", [2, 4]), m.tensor("y", [1, 2]), m)[3])(M())))
case("int8_noq")(lambda: fc(dict(ttype=INT8, data=np.ones((2, 4)))))
case("w_zp")(lambda: fc(dict(ttype=INT8, data=np.ones((2, 4)), scale=0.5, zp=3)))
def conv(wshape, op="CONV_2D", wkw=None, opts=None, out=(1, 2, 2, 2)):
    m = M(); x = m.tensor("x", [1, 2, 2, 2]); w = m.tensor("w", wshape, **(wkw or dict(data=W(*wshape))))
    y = m.tensor("y", out); m.op(OPS[op], [x, w], [y], opts or ("Conv2DOptions" if op == "CONV_2D" else "DepthwiseConv2DOptions",
        dict(stride_h=1, stride_w=1, dilation_h_factor=1, dilation_w_factor=1)))
    return m.build([x], [y])
case("w_qdim")(lambda: conv([2, 1, 1, 2], wkw=dict(ttype=INT8, data=np.ones((2, 1, 1, 2)), scale=[0.5, 0.5], zp=[0, 0], qdim=3)))
case("bias")(lambda: fc(bias=[1.0, 2.0, 3.0]))
case("pool_rank")(lambda: unary("MAX_POOL_2D", opts=("Pool2DOptions", dict(stride_h=1, stride_w=1, filter_height=1, filter_width=1))))
case("window")(lambda: unary("MAX_POOL_2D", xshape=(1, 2, 2, 1), yshape=(1, 2, 2, 1), opts=("Pool2DOptions", dict(stride_h=0, stride_w=1, filter_height=1, filter_width=1))))
case("depthwise")(lambda: conv([2, 1, 1, 2], op="DEPTHWISE_CONV_2D"))
case("shuffled")(lambda: fc(opts=("FullyConnectedOptions", dict(weights_format=1))))
case("rows")(lambda: fc(xshape=(1, 5)))
case("reshape_dyn")(lambda: unary("RESHAPE", ykw=dict(sig=[-1, 4])))
case("concat_none")(lambda: unary("CONCATENATION", ins=[]))
case("concat_axis")(lambda: unary("CONCATENATION", opts=("ConcatenationOptions", dict(axis=5))))
def mean(axes, atype=INT32, op="MEAN", xshape=(1, 4), yshape=(1, 1)):
    m = M(); x = m.tensor("x", list(xshape)); a = m.tensor("axes" if op == "MEAN" else "paddings", [len(axes)] if op == "MEAN" or np.ndim(axes) == 1 else list(np.shape(axes)), atype, data=axes)
    y = m.tensor("y", list(yshape)); m.op(OPS[op], [x, a], [y]); return m.build([x], [y])
case("axes_type")(lambda: mean([1.0], FLOAT32))
case("axes_range")(lambda: mean([7]))
case("pad_block")(lambda: mean([[65536, 0], [0, 0]], op="PAD", xshape=(1, 128), yshape=(65537, 128)))
case("pad_count")(lambda: mean([1, 1, 1], op="PAD", yshape=(1, 4)))
case("pad_neg")(lambda: mean([[-1, 0], [0, 0]], op="PAD", yshape=(1, 4)))
case("quant_noout")(lambda: unary("QUANTIZE", outs=[]))
def qtwice():
    m = M(); x = m.tensor("x", [1, 4]); y = m.tensor("y", [1, 4])
    m.op(OPS["RELU"], [x], [y]); m.op(OPS["QUANTIZE"], [x], [y]); return m.build([x], [y])
case("quant_twice")(qtwice)
case("neg_dims")(lambda: fc(dict(raw=bytes(32)), wshape=(-2, 4)))
case("sparse")(lambda: fc(dict(sparse=True)))


if __name__ == "__main__":
    for name, build in cases.items():
        print(name, base64.b64encode(zlib.compress(build(), 9)).decode())
