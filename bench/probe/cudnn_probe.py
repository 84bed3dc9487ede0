# PyTorch's kernels (names and times, from its profiler) for the layers of
# bench/probe/cudnn_probe.rhai, channels-last, cudnn.benchmark on.
import torch
from torch.profiler import profile, ProfilerActivity

torch.backends.cudnn.benchmark = True
torch.backends.cudnn.allow_tf32 = False
layers = [(64, 64, 3, 1, 1, 56), (256, 512, 1, 2, 0, 56), (128, 128, 3, 1, 1, 28), (512, 512, 3, 1, 1, 7)]
for dtype in (torch.bfloat16, torch.float32):
    for (ci, co, k, s, p, n) in layers:
        x = torch.randn(64, ci, n, n, device="cuda", dtype=dtype).contiguous(memory_format=torch.channels_last)
        w = (torch.randn(co, ci, k, k, device="cuda", dtype=dtype) * 0.05).contiguous(memory_format=torch.channels_last)
        f = lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=p)
        f(); f(); torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(20):
                f()
            torch.cuda.synchronize()
        print(f"== {ci}->{co} {k}x{k} s{s} {n}^2 {dtype}")
        for e in prof.key_averages():
            if e.device_type.name == "CUDA" or getattr(e, "self_device_time_total", 0) > 0:
                print(f"  {e.count:4d} x {e.self_device_time_total / max(e.count, 1):9.2f} us  {e.key[:110]}")
