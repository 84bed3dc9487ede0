"""Checks tests/scripts/losses_sequence.out against PyTorch itself (run where
torch is installed: `python3 tests/scripts/verify/losses_sequence.py`)."""
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)
q = torch.tensor
logits = (torch.arange(60.0).reshape(5, 3, 4) * 0.37).sin() * 2.0
lp = logits.log_softmax(2)
padded = q([[1, 2, 2], [3, 3, 0], [1, 0, 0]])
flat = q([1, 2, 2, 3, 3, 1])
inputs = q([5, 5, 3])
lens = q([3, 2, 1])


def grads():
    x = logits.clone().requires_grad_(True)
    F.ctc_loss(x.log_softmax(2), padded, inputs, lens).backward()
    lpg = lp.clone().requires_grad_(True)
    F.ctc_loss(lpg, padded, inputs, lens, reduction="sum").backward()
    return {"ctc_logits_grad": x.grad, "ctc_log_probs_grad": lpg.grad}


a = (torch.arange(12.0).reshape(3, 4) * 0.7).cos()
p = (torch.arange(12.0).reshape(3, 4) * 1.3).sin()
n = (torch.arange(12.0).reshape(3, 4) * 0.4 + 1.0).cos()


def triplet_grad():
    ag = a.clone().requires_grad_(True)
    F.triplet_margin_with_distance_loss(ag, p, n, distance_function=lambda x, y: (x - y).abs().sum(1), margin=2.0).backward()
    return ag.grad


cosine = lambda x, y: 1.0 - F.cosine_similarity(x, y)
expected = {
    "ctc_none": F.ctc_loss(lp, padded, inputs, lens, reduction="none"),
    "ctc_mean": F.ctc_loss(lp, padded, inputs, lens),
    "ctc_sum_concatenated": F.ctc_loss(lp, flat, inputs, q([3, 2, 1]), 0, "sum"),
    "ctc_blank_3": F.ctc_loss(lp, q([[1, 2, 2], [0, 0, 1], [2, 0, 0]]), inputs, lens, blank=3, reduction="none"),
    "ctc_impossible": F.ctc_loss(lp, padded, q([5, 2, 3]), lens, reduction="none"),
    "ctc_zero_infinity": F.ctc_loss(lp, padded, q([5, 2, 3]), lens, reduction="sum", zero_infinity=True),
    "ctc_unbatched": F.ctc_loss(lp[:, 0], q([1, 2]), q(5), q(2)),
    **grads(),
    "triplet_distance_default": F.triplet_margin_with_distance_loss(a, p, n, reduction="none"),
    "triplet_distance_cosine": F.triplet_margin_with_distance_loss(a, p, n, distance_function=cosine, margin=0.5, swap=True, reduction="none"),
    "triplet_distance_l1_grad": triplet_grad(),
}
expected = {k: v.detach().tolist() for k, v in expected.items()}
_, checked = check("losses_sequence.out", expected, rtol=1e-12, atol=1e-14)
print(f"{checked} results agree with PyTorch {torch.__version__}")
