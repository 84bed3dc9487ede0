"""Checks tests/scripts/cnn_functional.out against PyTorch itself (run
where torch is installed: `python3 tests/scripts/verify/cnn_functional.py`).
The inputs are sin(k·i), rebuilt here exactly."""
import numpy as np
import torch
import torch.nn.functional as F
from golden import check

torch.set_default_dtype(torch.float64)


def data(shape, k):
    return torch.sin(torch.arange(int(np.prod(shape)), dtype=torch.float64) * k).reshape(shape)


x = data([2, 4, 5, 4], 0.37)
x1 = data([2, 3, 9], 0.29)
grid = data([2, 3, 6, 2], 0.53) * 1.3
rm, rv = torch.zeros(4), torch.ones(4)
bn_train = F.batch_norm(x, rm, rv, data([4], 1.0), data([4], 2.0), training=True, momentum=0.2)
mi = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
am = F.adaptive_max_pool2d(x, [3, 2], return_indices=True)
expected = {
    "conv2d_groups_stride_dilation": F.conv2d(x, data([6, 2, 3, 2], 0.91), data([6], 1.3), stride=[2, 1], padding=[1, 2], dilation=[1, 2], groups=2),
    "conv2d_positional": F.conv2d(x, data([3, 4, 2, 2], 0.5), None, 1, 1),
    "conv2d_same": F.conv2d(x, data([3, 4, 3, 2], 0.5), padding="same"),
    "conv2d_valid": F.conv2d(x, data([3, 4, 3, 3], 0.5), padding="valid"),
    "conv2d_depthwise": F.conv2d(x, data([4, 1, 3, 3], 0.7), padding=1, groups=4),
    "conv2d_unbatched": F.conv2d(x[1], data([2, 4, 2, 3], 0.3)),
    "conv1d": F.conv1d(x1, data([5, 3, 4], 0.6), data([5], 0.4), stride=2, padding=2),
    "conv3d": F.conv3d(data([1, 2, 4, 3, 4], 0.11), data([3, 2, 2, 3, 2], 0.8), stride=[1, 2, 2], padding=[1, 0, 1]),
    "conv_transpose2d": F.conv_transpose2d(x, data([4, 3, 3, 2], 0.73), data([6], 0.2), stride=[2, 3], padding=[1, 0], output_padding=[1, 2], groups=2, dilation=[1, 2]),
    "conv_transpose1d": F.conv_transpose1d(x1, data([3, 2, 3], 0.6), stride=3, padding=1),
    "conv_transpose3d": F.conv_transpose3d(data([1, 2, 2, 3, 2], 0.2), data([2, 2, 2, 2, 2], 0.4), stride=2),
    "max_pool2d": F.max_pool2d(x, 2),
    "max_pool2d_ceil": F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    "max_pool2d_dilation": F.max_pool2d(x, [2, 2], stride=1, dilation=[2, 1]),
    "max_pool2d_indices": mi[1],
    "max_pool1d": F.max_pool1d(x1, 3, 2, 1),
    "max_pool3d": F.max_pool3d(data([1, 2, 4, 4, 3], 0.23), 2),
    "avg_pool2d": F.avg_pool2d(x, 2),
    "avg_pool2d_ceil_pad": F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True),
    "avg_pool2d_exclude_pad": F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
    "avg_pool2d_divisor": F.avg_pool2d(x, [3, 2], stride=2, divisor_override=5),
    "avg_pool1d": F.avg_pool1d(x1, 4, stride=3, padding=2),
    "adaptive_avg_pool2d": F.adaptive_avg_pool2d(x, [3, 3]),
    "adaptive_avg_pool2d_none": F.adaptive_avg_pool2d(x, [2, None]),
    "adaptive_avg_pool1d": F.adaptive_avg_pool1d(x1, 4),
    "adaptive_max_pool2d": am[0],
    "adaptive_max_pool2d_indices": am[1],
    "batch_norm_train": bn_train,
    "batch_norm_running_mean": rm.clone(),
    "batch_norm_running_var": rv.clone(),
    "batch_norm_eval": F.batch_norm(x, rm, rv, eps=1e-3),
    "group_norm": F.group_norm(x, 2, data([4], 1.0), data([4], 2.0)),
    "instance_norm": F.instance_norm(x, weight=data([4], 0.5), bias=data([4], 0.7)),
    "interpolate_nearest": F.interpolate(x, scale_factor=1.5),
    "interpolate_nearest_exact": F.interpolate(x, size=[3, 7], mode="nearest-exact"),
    "interpolate_bilinear": F.interpolate(x, size=[7, 6], mode="bilinear"),
    "interpolate_bilinear_align": F.interpolate(x, size=[7, 6], mode="bilinear", align_corners=True),
    "interpolate_bilinear_scale": F.interpolate(x, scale_factor=[0.6, 1.7], mode="bilinear"),
    "interpolate_bicubic": F.interpolate(x, size=[8, 3], mode="bicubic"),
    "interpolate_bicubic_align": F.interpolate(x, size=[8, 3], mode="bicubic", align_corners=True),
    "interpolate_linear": F.interpolate(x1, size=13, mode="linear"),
    "interpolate_trilinear": F.interpolate(data([1, 1, 2, 3, 2], 0.5), size=[3, 4, 3], mode="trilinear"),
    "interpolate_area": F.interpolate(x, size=[2, 3], mode="area"),
    "pixel_shuffle": F.pixel_shuffle(data([1, 8, 2, 3], 0.1), 2),
    "pixel_unshuffle": F.pixel_unshuffle(data([1, 2, 4, 6], 0.1), 2),
    "unfold": F.unfold(x, [2, 3], dilation=[2, 1], padding=1, stride=[1, 2]),
    "fold": F.fold(data([2, 12, 12], 0.3), [5, 6], [2, 3], stride=[2, 1], padding=[1, 0]),
    "dropout2d_eval": F.dropout2d(x, 0.5, False),
    "grid_sample_bilinear": F.grid_sample(x, grid, align_corners=False),
    "grid_sample_border_align": F.grid_sample(x, grid, padding_mode="border", align_corners=True),
    "grid_sample_reflection": F.grid_sample(x, grid, padding_mode="reflection", align_corners=False),
    "grid_sample_nearest": F.grid_sample(x, grid, mode="nearest", align_corners=False),
    "grid_sample_bicubic": F.grid_sample(x, grid, mode="bicubic", align_corners=False),
    "grid_sample_bicubic_border_align": F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=True),
    "grid_sample_bicubic_reflection": F.grid_sample(x, grid, mode="bicubic", padding_mode="reflection",
                                                    align_corners=False),
    "affine_grid": F.affine_grid(data([2, 2, 3], 0.7), [2, 3, 4, 5], align_corners=False),
    "affine_grid_align": F.affine_grid(data([2, 2, 3], 0.7), [2, 3, 4, 5], align_corners=True),
    "lp_pool2d": F.lp_pool2d(x.abs() + 0.1, 2.0, 2),
    "max_unpool2d": F.max_unpool2d(mi[0], mi[1], 3, stride=2, padding=1, output_size=[5, 4]),
    "local_response_norm": F.local_response_norm(x, 3),
    "channel_shuffle": F.channel_shuffle(data([1, 6, 2, 2], 0.3), 3),
    "upsample_bilinear": F.upsample_bilinear(x, scale_factor=2),
}
expected = {k: v.tolist() for k, v in expected.items()}
text, checked = check("cnn_functional.out", expected, rtol=1e-10, atol=1e-12)
for msg in ["does not fit weight of shape [3, 3, 2, 2]", "is smaller than the kernel [6, 2]",
            "padding='same' is not supported for strided convolutions", "must be smaller than either stride",
            "must be at most half of kernel_size", "running_mean of shape [3] must be [4]",
            "not divisible into 3 groups", "align_corners can only be set", "expects a floating-point input"]:
    assert msg in text, msg
print(f"{checked} results agree with PyTorch {torch.__version__}")
