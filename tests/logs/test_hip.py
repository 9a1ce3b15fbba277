"""AMD_LOG_LEVEL=4 logs -> a table of kernel launches and copies (ROCm 6 and 7 layouts, hard-wrapped copies)."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.logs import hip_records, hip_summary, parse_hip_log


def rocm7(ts: int, message: str, level: int = 3, where: str = "hip_module.cpp   :662 ") -> str:
    return f":{level}:{where}: {ts} us: [pid:4242 tid: 0x7f00aa] {message}"


def rocm6(ts: int, message: str, level: int = 3, where: str = "hip_module.cpp   :662 ") -> str:
    return f":{level}:{where}: {ts} us: 4242 : [tid:0x7f00aa] {message}"


def session(fmt) -> list[str]:
    """One copy, one kernel launch (with its shader name and dispatch) and one memset, as the runtime logs them."""
    return [
        fmt(100, " hipMemcpyAsync ( 0x7e0000, 0x5500, 4096, hipMemcpyHostToDevice, stream:0x9a00 )",
            where="hip_memory.cpp   :1520"),
        fmt(112, "hipMemcpyAsync: Returned hipSuccess : : duration: 12 us", where="hip_memory.cpp   :1521"),
        fmt(120, " hipLaunchKernel ( 0x14b5, {256,1,1}, {128,1,1}, 0x7ffd, 0, stream:0x9a00 )"),
        fmt(124, "Command (KernelExecution) enqueued: 0x14b151", level=4, where="command.cpp      :349 "),
        fmt(126, "ShaderName : _ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_", where="rocvirtual.cpp   :2853"),
        fmt(128, "HWq=0x14b3, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), setup=3, "
                 "grid=[32768, 1, 1], workgroup=[128, 1, 1], private_seg_size=0, group_seg_size=0",
            level=4, where="rocvirtual.cpp   :891 "),
        fmt(131, "hipLaunchKernel: Returned hipSuccess :", where="hip_module.cpp   :663 "),
        fmt(140, " hipMemsetAsync ( 0x7e1000, 0, 512, stream:0x9a00 )", where="hip_memory.cpp   :2900"),
        fmt(141, "hipMemsetAsync: Returned hipErrorInvalidValue :", where="hip_memory.cpp   :2901"),
        fmt(150, "Fail allocation local memory", level=1, where="rocdevice.cpp    :2190"),
    ]


@pytest.mark.parametrize("fmt, layout", [(rocm7, "rocm7"), (rocm6, "rocm6")])
def test_launches_and_copies_from_both_layouts(fmt, layout):
    table = parse_hip_log("\n".join(session(fmt)) + "\n")
    assert table.attrs["layout"] == layout
    assert table.attrs["records"] == 10
    assert list(table["kind"]) == ["copy", "kernel", "memset"]
    copy, kernel, memset = (table.iloc[i] for i in range(3))
    assert (copy["bytes"], copy["direction"], copy["stream"], copy["status"], copy["api_us"]) == \
        (4096, "HtoD", "0x9a00", "hipSuccess", 12)
    assert kernel["name"] == "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_"
    assert (kernel["grid"], kernel["workgroup"], kernel["kernel_class"], kernel["pid"], kernel["tid"]) == \
        ("32768,1,1", "128,1,1", "compute", 4242, "0x7f00aa")
    assert (memset["bytes"], memset["kernel_class"], memset["status"]) == (512, "memory", "hipErrorInvalidValue")
    assert table.attrs["errors"] == [{"log_line": 10, "message": "Fail allocation local memory"}]


def hard_wrap(records: list[str], width: int, per_line: int) -> str:
    """What a terminal copy looks like: each record padded to a multiple of ``width``, cut every ``per_line`` widths."""
    stream = "".join(r + " " * (-len(r) % width) for r in records)
    chunk = width * per_line
    return "\n".join(stream[i:i + chunk] for i in range(0, len(stream), chunk)).rstrip() + "\n"


def test_a_hard_wrapped_copy_reads_like_the_original():
    records = session(rocm6)
    wrapped = hard_wrap(records, width=100, per_line=3)
    lines = wrapped.splitlines()
    assert any(line.count(" us: ") >= 2 for line in lines)  # several records share a line ...
    assert any(line.strip() and not line.startswith(":") for line in lines)  # ... and others go on the next one
    plain = parse_hip_log("\n".join(records))
    again = parse_hip_log(wrapped)
    columns = ["kind", "name", "grid", "workgroup", "bytes", "direction", "status"]
    assert again[columns].astype(str).values.tolist() == plain[columns].astype(str).values.tolist()
    assert [r.message for r in hip_records(wrapped)] == [r.message for r in hip_records("\n".join(records))]


def test_program_output_between_records_is_not_glued_to_a_kernel_name():
    lines = session(rocm7)
    lines.insert(5, "epoch 1 loss 0.25")
    table = parse_hip_log("\n".join(lines))
    assert table.iloc[1]["name"] == "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_"


def test_older_rocm5_layout_and_copies_named_by_direction():
    log = (":3:hip_memory.cpp           :384 : 2249898000349 us: 182280: [7f634262e880] "
           "hipMemcpyDtoH ( 0x7fff, 0x7f00, 2048 )\n")
    row = parse_hip_log(log).iloc[0]
    assert (row["api"], row["direction"], row["bytes"], row["tid"]) == ("hipMemcpyDtoH", "DtoH", 2048, "0x7f634262e880")


def test_summary_counts_by_direction_and_names_failed_calls():
    summary = hip_summary(parse_hip_log("\n".join(session(rocm7))))
    assert (summary["launches"], summary["copies"], summary["memsets"]) == (1, 1, 1)
    assert summary["bytes_by_direction"] == {"?": {"calls": 1, "bytes": 512}, "HtoD": {"calls": 1, "bytes": 4096}}
    assert summary["failed_calls"] == [{"log_line": 8, "api": "hipMemsetAsync", "status": "hipErrorInvalidValue"}]


def test_text_without_hip_records_gives_an_empty_table():
    table = parse_hip_log("Epoch 1, Training Loss: 2.0\n")
    assert table.empty and table.attrs["layout"] is None


# A real ROCm 7 AMD_LOG_LEVEL=4 excerpt (PyTorch in the LAIF container lumi-multitorch-u24r70f21m50t210-20260513
# on LUMI): Lumi-supercomputer/Getting_Started_with_AI_workshop (MIT),
# 04_Understanding_GPU_activity_and_checking_jobs/README.md, the 2026 edition's "Activate logging" block.
# TRANSCRIBED from the public page (every hard-wrapped line is 199 characters wide, as in the source); the
# kernel's name is logged demangled and hard-wrapped over three lines.
REAL_ROCM7 = """\
:3:hip_module.cpp           :812 : 9529939547052 us: [pid:31271 tid: 0x145b173466c0]  hipLaunchKernel ( 0x145bd3dc0e30, {65536,1,1}, {256,1,1}, 0x145b17344480, 0, stream:<null> ) 
:4:hip_device.cpp           :35  : 9529939547073 us: [pid:31271 tid: 0x145b173466c0] NullStream 0x101fe7b0, wait 1  
:4:command.cpp              :169 : 9529939547067 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x1449648f6fe0 complete      
:4:command.cpp              :169 : 9529939547081 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x144964976700 complete                                          
:4:command.cpp              :357 : 9529939547077 us: [pid:31271 tid: 0x145b173466c0] Command (KernelExecution) enqueued: 0x144964749e60 to queue: 0x101fe7b0
:3:rocvirtual.cpp           :883 : 9529939547090 us: [pid:31271 tid: 0x145b173466c0] Arg0:   = val:0x4000000 (size:0x4)
:4:command.cpp              :169 : 9529939547084 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x1449649769a0 complete                                                                             
:4:command.cpp              :169 : 9529939547097 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x14496495dfa0 complete                  
:3:rocvirtual.cpp           :883 : 9529939547093 us: [pid:31271 tid: 0x145b173466c0] Arg1:   = val:0x3 (size:0x1)                                                                  
:3:rocvirtual.cpp           :879 : 9529939547106 us: [pid:31271 tid: 0x145b173466c0] Arg2:   = 0x00 00 60 53 4b 14 00 00 00 00 40 43 4b 14 00 00  (size:0x10)
:3:rocvirtual.cpp           :3351: 9529939547112 us: [pid:31271 tid: 0x145b173466c0] ShaderName : void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scala
r_kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::Tensor
IteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul>)                                                                                                                                      
:3:rocvirtual.cpp           :3549: 9529939547119 us: [pid:31271 tid: 0x145b173466c0] KernargSegmentByteSize = 24 KernargSegmentAlignment = 128
:4:command.cpp              :169 : 9529939547100 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x14496495e240 complete
:4:rocvirtual.cpp           :1083: 9529939547131 us: [pid:31271 tid: 0x145b173466c0] SWq=0x14590ce70000, HWq=0x1457f1700000, id=1, Dispatch Header = 0xb02 (type=2, barrier=1, acquire=1, release=1), s
etup=3, grid=[16777216, 1, 1], workgroup=[256, 1, 1], private_seg_size=0, group_seg_size=0, kernel_obj=0x1454f82b71c0, kernarg_address=0x1457f1544280, completion_signal=0x0, correlation_id=0, rptr=39
030, wptr=39805                                                                                                                                                                                        
:4:command.cpp              :169 : 9529939547137 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x144964978020 complete
:4:command.cpp              :169 : 9529939547142 us: [pid:31271 tid: 0x1457f1aaf6c0] Command 0x14496497a990 complete
:3:hip_module.cpp           :813 : 9529939547138 us: [pid:31271 tid: 0x145b173466c0] hipLaunchKernel: Returned hipSuccess : : duration: 86 us 
"""

POW_KERNEL = ("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::pow_tensor_scalar_"
              "kernel_impl<float, float>(at::TensorIteratorBase&, float)::{lambda(float)#1}, std::array<char*, 2ul> >"
              "(int, at::native::(anonymous namespace)::pow_tensor_scalar_kernel_impl<float, float>(at::TensorIterator"
              "Base&, float)::{lambda(float)#1}, std::array<char*, 2ul>)")


def test_a_real_rocm7_log_keeps_the_whole_demangled_kernel_name():
    table = parse_hip_log(REAL_ROCM7)
    assert table.attrs["layout"] == "rocm7"
    kernel = table.iloc[0]
    assert (kernel["name"], kernel["grid"], kernel["workgroup"], kernel["status"], kernel["api_us"]) == \
        (POW_KERNEL, "16777216,1,1", "256,1,1", "hipSuccess", 86)


def test_two_different_void_kernels_are_two_kernels(tmp_path, capsys):
    # The real excerpt followed by a second launch written in the same layout (not recorded): a different
    # demangled kernel that also starts with "void".
    second = "\n".join(rocm7(9529939547200 + i, m, where=w) for i, (m, w) in enumerate([
        (" hipLaunchKernel ( 0x145bd3dc0f00, {64,1,1}, {256,1,1}, 0x145b17344480, 0, stream:<null> ) ",
         "hip_module.cpp           :812 "),
        ("ShaderName : void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
         "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
         "rocvirtual.cpp           :3351"),
        ("hipLaunchKernel: Returned hipSuccess : : duration: 9 us ", "hip_module.cpp           :813 ")]))
    log = tmp_path / "rocm7.log"
    log.write_text(REAL_ROCM7 + second + "\n")
    summary = hip_summary(parse_hip_log(log.read_text()))
    names = [k["name"] for k in summary["top_kernels"]]
    assert len(names) == 2 and all(n.startswith("void at::native::") for n in names)
    assert main(["logs", "hip", str(log), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed["top_kernels"]) == 2 and "void" not in [k["name"] for k in printed["top_kernels"]]
