"""PyTorch side of bench/cnn_bench.rhai (cuDNN with benchmark mode on): the
same cases, milliseconds per call after two untimed calls (50 timed for a
forward, 20 for a forward and backward), on the GPU."""
import time
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.backends.cudnn.benchmark = True
# kiln's f32 convolutions use full f32 unless TF32 is asked for: compare like with like
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
torch.manual_seed(0)


def report(name, value):
    print(f"RESULT,{name},{value},ms/call", flush=True)


def per_call(f, reps):
    f()
    f()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / reps * 1e3


layers = [
    ("64->64 3x3 56^2", 64, 64, 3, 1, 1, 56),
    ("256->512 1x1 s2 56^2", 256, 512, 1, 2, 0, 56),
    ("128->128 3x3 28^2", 128, 128, 3, 1, 1, 28),
    ("512->512 3x3 7^2", 512, 512, 3, 1, 1, 7),
]
for dtype, dname in [(torch.float32, "f32"), (torch.bfloat16, "bf16")]:
    for fmt in ["nchw", "nhwc"]:
        for name, cin, cout, k, s, p, size in layers:
            x = torch.randn(64, cin, size, size, device=dev, dtype=dtype)
            w = torch.randn(cout, cin, k, k, device=dev, dtype=dtype) * 0.05
            if fmt == "nhwc":
                x = x.contiguous(memory_format=torch.channels_last)
                w = w.contiguous(memory_format=torch.channels_last)
            tag = f"conv2d {name} {dname} {fmt}"
            report(f"{tag} fwd", per_call(lambda: F.conv2d(x, w, stride=s, padding=p), 50))
            xg = x.detach().requires_grad_(True)
            wg = w.detach().requires_grad_(True)
            report(f"{tag} fwd+bwd", per_call(lambda: F.conv2d(xg, wg, stride=s, padding=p).sum().backward(), 20))
act = torch.randn(64, 64, 112, 112, device=dev)
report("max_pool2d 3x3 s2 64x64x112^2", per_call(lambda: F.max_pool2d(act, 3, 2, 1), 10))
actg = act.detach().requires_grad_(True)
report("max_pool2d 3x3 s2 64x64x112^2 fwd+bwd", per_call(lambda: F.max_pool2d(actg, 3, 2, 1).sum().backward(), 10))
bn = torch.randn(64, 256, 56, 56, device=dev)
rm, rv = torch.zeros(256, device=dev), torch.ones(256, device=dev)
report("batch_norm train 64x256x56^2", per_call(lambda: F.batch_norm(bn, rm, rv, training=True), 10))
bng = bn.detach().requires_grad_(True)
gamma = torch.ones(256, device=dev, requires_grad=True)
beta = torch.zeros(256, device=dev, requires_grad=True)
report("batch_norm train 64x256x56^2 fwd+bwd",
       per_call(lambda: F.batch_norm(bng, rm, rv, gamma, beta, training=True).sum().backward(), 10))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (self.shortcut(x) if self.shortcut is not None else x))


model = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
    Block(64, 64, 1), Block(64, 64, 1), Block(64, 128, 2), Block(128, 128, 1),
    Block(128, 256, 2), Block(256, 256, 1), Block(256, 512, 2), Block(512, 512, 1),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
images = torch.randn(64, 3, 32, 32, device=dev)
labels = torch.randint(0, 10, (64,), device=dev)


def step():
    opt.zero_grad()
    F.cross_entropy(model(images), labels).backward()
    opt.step()


report("resnet18-style train step 64x3x32^2 f32", per_call(step, 10))
