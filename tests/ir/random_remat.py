"""random_remat.py SEED COUNT DIR — writes COUNT random .ax models with long
skip connections (Dense layers of varied widths, adds of earlier values of the
same width) as DIR/rand_SEED_K.ax, for the remat property test in run.sh."""
import random
import sys


def model(rng, name):
    widths = [16, 64, 256, 512]
    values = [("x", 64)]
    layers, body = [], []
    for k in range(rng.randint(5, 14)):
        a_name, a_w = values[-1] if rng.random() < 0.6 else rng.choice(values)
        same = [v for v in values[:-1] if v[1] == a_w and v[0] != a_name]
        if same and rng.random() < 0.4:
            b_name = rng.choice(same)[0]
            body.append(f"    v{k} = {a_name} + {b_name}")
            values.append((f"v{k}", a_w))
            continue
        w = rng.choice(widths)
        layers.append(f"    d{k} = Dense({a_w} => {w}, activation=relu)")
        body.append(f"    v{k} = d{k}({a_name})")
        values.append((f"v{k}", w))
    last = values[-1][0]
    return "\n".join([f"@axiom function {name}(x::Float32[1, 64])", *layers, *body,
                      f"    return {last}", "end", ""])


def main():
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    for k in range(count):
        name = f"rand_{seed}_{k}"
        with open(f"{out}/{name}.ax", "w") as f:
            f.write(model(rng, name))


main()
