"""NCCL_DEBUG=INFO -> which network RCCL used."""
from __future__ import annotations

from lumikit.logs import parse_rccl

PREFIX = "nid007001:5811:5890 [0] NCCL INFO "


def test_plugin_and_cxi_provider_mean_slingshot():
    log = PREFIX + "NET/OFI Using aws-ofi-rccl 1.4.0\n" + PREFIX + "NET/OFI Selected Provider is cxi (found 4 nics)\n"
    result = parse_rccl(log)
    assert (result.transport, result.plugin, result.provider, result.ok) == ("ofi", "aws-ofi-rccl 1.4.0", "cxi", True)
    assert [e.line_no for e in result.evidence] == [1, 2]
    assert "aws-ofi-rccl 1.4.0 with provider cxi" in result.describe()


def test_no_plugin_means_sockets():
    log = "\n".join([
        PREFIX + "Bootstrap : Using hsn0:10.253.6.17<0>",
        PREFIX + "NET/Plugin : Plugin load (librccl-net.so) returned 2 : librccl-net.so: cannot open shared object file",
        PREFIX + "NET/Plugin : No plugin found, using internal implementation",
        PREFIX + "NET/Socket : Using [0]hsn0:10.253.6.17<0>",
    ])
    result = parse_rccl(log)
    assert (result.transport, result.plugin_missing, result.ok) == ("socket", True, False)
    assert [e.line_no for e in result.evidence] == [2, 3, 4]
    assert "TCP sockets" in result.describe()


def test_a_plugin_with_another_provider_is_not_ok_on_lumi():
    result = parse_rccl(PREFIX + "NET/OFI Using aws-ofi-rccl 1.6.0\n" + PREFIX + "NET/OFI Selected Provider is tcp\n")
    assert result.transport == "ofi" and not result.ok
    assert "should be cxi" in result.describe()


def test_a_failed_fabric_domain_is_reported_with_the_warning():
    line = "nid005018:47819:47913 [0] create_component:817 NCCL WARN NET/OFI Couldn't open a fabric access domain."
    result = parse_rccl(line)
    assert (result.transport, result.ofi_failed, len(result.warnings)) == ("unknown", True, 1)


def test_a_log_without_rccl_lines_says_so():
    result = parse_rccl("Epoch 1, Training Loss: 2.0\n")
    assert result.transport == "unknown" and result.evidence == ()
    assert "NCCL_DEBUG=INFO" in result.describe()


def test_channels_ending_in_gdrdma_prove_gpu_direct_rdma():
    log = "\n".join([
        PREFIX + "NET/OFI Using aws-ofi-rccl 1.4.0",
        PREFIX + "NET/OFI Selected Provider is cxi (found 4 nics)",
        PREFIX + "NCCL_NET_GDR_LEVEL set by environment to PHB",
        PREFIX + "Channel 00/0 : 7[d1000] -> 8[c1000] [send] via NET/AWS Libfabric/0/GDRDMA",
        PREFIX + "Channel 01/0 : 7[d1000] -> 8[c1000] [send] via NET/AWS Libfabric/0",
    ])
    result = parse_rccl(log)
    assert result.gdr and [g.line_no for g in result.gdr_lines] == [4]
    assert result.describe().endswith("with provider cxi and GPU-direct RDMA.")
    assert not parse_rccl(log.replace("/GDRDMA", "")).gdr


def test_the_sample_logs_read_as_what_they_stand_for():
    from lumikit.logs.samples import rccl_debug_log

    good = parse_rccl(rccl_debug_log(plugin=True, gdr=True))
    assert (good.transport, good.provider, good.ok, [g.line_no for g in good.gdr_lines]) == ("ofi", "cxi", True, [9, 10])
    fallback = parse_rccl(rccl_debug_log(plugin=False, gdr=False))
    assert (fallback.transport, fallback.plugin_missing, fallback.gdr) == ("socket", True, False)


def test_a_plugin_that_failed_and_fell_back_to_sockets_is_reported_as_sockets_with_the_cause():
    log = "\n".join([
        PREFIX + "NET/OFI Using aws-ofi-rccl 1.4.0",
        "nid005018:47819:47913 [0] create_component:817 NCCL WARN NET/OFI Couldn't open a fabric access domain.",
        PREFIX + "NET/Plugin: Plugin load returned 2 : ofi init failed",
        PREFIX + "NET/Socket : Using [0]hsn0:10.253.6.17<0>",
        PREFIX + "Using network Socket",
    ])
    result = parse_rccl(log)
    assert (result.transport, result.ofi_failed, result.network, result.ok) == ("socket", True, "Socket", False)
    assert result.plugin == "aws-ofi-rccl 1.4.0"
    text = result.describe()
    assert "TCP sockets" in text and "fabric access domain" in text


def test_using_network_decides_the_transport():
    assert parse_rccl(PREFIX + "NET/OFI Using aws-ofi-rccl 1.4.0\n" + PREFIX + "Using network AWS Libfabric\n"
                      ).transport == "ofi"
    assert parse_rccl(PREFIX + "NET/IB : Using [0]mlx5_0:1/IB\n" + PREFIX + "Using network Socket\n").transport == "socket"
    assert parse_rccl(PREFIX + "Using network IB\n").transport == "ib"
    # without the "Using network" line, a failed plugin followed by NET/Socket is sockets too
    log = PREFIX + "NET/OFI Using aws-ofi-rccl 1.4.0\n" + PREFIX.replace("INFO", "WARN") + \
        "NET/OFI Couldn't open a fabric access domain.\n" + PREFIX + "NET/Socket : Using [0]hsn0:10.253.6.17<0>\n"
    assert parse_rccl(log).transport == "socket"
