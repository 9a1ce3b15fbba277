"""Short kernel names for tables and plots."""
from __future__ import annotations

from lumikit.rocprof import short_kernel_name


def test_templates_parameters_and_clone_suffix_are_dropped():
    assert short_kernel_name("transpose_kernel(float*, float*, int, int) [clone .kd]") == "transpose_kernel"
    assert short_kernel_name("void at::native::elementwise_kernel<128, 4, Lambda<float> >(int, Lambda<float>)") \
        == "at::native::elementwise_kernel"


def test_mangled_symbols_show_their_qualified_name():
    assert short_kernel_name("_ZN2at6native6legacy18elementwise_kernelILi512ELi1EEviT1_") == \
        "at::native::legacy::elementwise_kernel"
    assert short_kernel_name("_Z9my_kernelPfi") == "my_kernel"


def test_long_names_are_cut_to_the_width():
    name = short_kernel_name("igemm_fwd_gtcx3_nhwc_fp16_bx0_ex0_bt128x128x32_wt32x32x8", width=20)
    assert name == "igemm_fwd_gtcx3_nhw…"
    assert len(name) == 20


def test_an_anonymous_namespace_leaves_no_empty_scope():
    # the names a PyTorch batch norm runs under, demangled and mangled (issue 27 saw "at::native::::batch_norm...")
    for name in ("void at::native::(anonymous namespace)::batch_norm_collect_statistics_kernel<float, float>(int)",
                 "at::native::{anonymous}::batch_norm_collect_statistics_kernel",
                 "_ZN2at6native12_GLOBAL__N_136batch_norm_collect_statistics_kernelIfEEvi"):
        assert short_kernel_name(name) == "at::native::batch_norm_collect_statistics_kernel", name
