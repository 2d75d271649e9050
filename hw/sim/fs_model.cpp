// The C ABI of fs_model.h over the Verilated model of fshmem_core.
#include "fs_model.h"

#include <cstring>
#include <new>

#include "Vfshmem_core.h"
#include "verilated.h"

struct fs_model {
    VerilatedContext ctx;
    Vfshmem_core *top;
};

namespace {

// Wide ports are arrays of 32-bit words, word 0 holding bits 31:0.
template <typename W>
void to_wide(W &w, const uint8_t *bytes) {
    for (int i = 0; i < FS_BEAT / 4; i++) {
        w[i] = uint32_t(bytes[4 * i]) | uint32_t(bytes[4 * i + 1]) << 8 |
               uint32_t(bytes[4 * i + 2]) << 16 | uint32_t(bytes[4 * i + 3]) << 24;
    }
}

template <typename W>
void from_wide(uint8_t *bytes, const W &w) {
    for (int i = 0; i < FS_BEAT / 4; i++) {
        uint32_t v = w[i];
        bytes[4 * i] = uint8_t(v);
        bytes[4 * i + 1] = uint8_t(v >> 8);
        bytes[4 * i + 2] = uint8_t(v >> 16);
        bytes[4 * i + 3] = uint8_t(v >> 24);
    }
}

}  // namespace

extern "C" fs_model *fs_model_new(void) {
    fs_model *m = new (std::nothrow) fs_model;
    if (!m) return nullptr;
    m->top = new (std::nothrow) Vfshmem_core(&m->ctx, "core");
    if (!m->top) {
        delete m;
        return nullptr;
    }
    m->top->clk = 0;
    m->top->rst_n = 0;
    m->top->eval();
    return m;
}

extern "C" void fs_model_free(fs_model *m) {
    if (!m) return;
    m->top->final();
    delete m->top;
    delete m;
}

extern "C" void fs_model_step(fs_model *m, const fs_in *in, fs_out *out) {
    Vfshmem_core *t = m->top;
    t->rst_n = in->rst_n;
    t->tick_us = in->tick_us;
    t->strap_node_id = in->strap_node_id;
    t->strap_node_count = in->strap_node_count;
    t->strap_window_size = in->strap_window_size;
    t->rto_ticks = in->rto_ticks;
    t->rto_max_ticks = in->rto_max_ticks;
    t->peer_timeout_ticks = in->peer_timeout_ticks;
    t->ack_delay_cycles = in->ack_delay_cycles;
    t->nack_hold_ticks = in->nack_hold_ticks;
    t->bar0_valid = in->bar0_valid;
    t->bar0_write = in->bar0_write;
    t->bar0_addr = in->bar0_addr;
    t->bar0_wdata = in->bar0_wdata;
    t->m_axi_awready = in->awready;
    t->m_axi_wready = in->wready;
    t->m_axi_bvalid = in->bvalid;
    t->m_axi_bresp = in->bresp;
    t->m_axi_bid = in->bid;
    t->m_axi_arready = in->arready;
    t->m_axi_rvalid = in->rvalid;
    t->m_axi_rresp = in->rresp;
    t->m_axi_rlast = in->rlast;
    t->m_axi_rid = in->rid;
    to_wide(t->m_axi_rdata, in->rdata);
    t->link0_tx_tready = in->tx_ready[0];
    t->link1_tx_tready = in->tx_ready[1];
    t->link0_rx_tvalid = in->rx_valid[0];
    t->link1_rx_tvalid = in->rx_valid[1];
    t->link0_rx_tlast = in->rx_last[0];
    t->link1_rx_tlast = in->rx_last[1];
    t->link0_rx_tkeep = in->rx_keep[0];
    t->link1_rx_tkeep = in->rx_keep[1];
    to_wide(t->link0_rx_tdata, in->rx_data[0]);
    to_wide(t->link1_rx_tdata, in->rx_data[1]);
    t->link_up = in->link_up;
    t->link_present = in->link_present;
    t->link_rate = in->link_rate;
    t->link_peer = in->link_peer;
    t->strap_compute = in->strap_compute;
    t->kcmd_valid = in->kcmd_valid;
    t->kam_ready = in->kam_ready;
    t->kc_ready = in->kc_ready;
    t->kerr_valid = in->kerr_valid;
    t->kerr_info = in->kerr_info;
    if (in->kcmd_valid) {
        for (int i = 0; i < 16; i++) {
            t->kcmd_desc[i] = in->kcmd_desc[i];
            t->kcmd_cont[i] = in->kcmd_cont[i];
        }
    }

    t->clk = 0;
    t->eval();

    out->bar0_rvalid = t->bar0_rvalid;
    out->bar0_rdata = t->bar0_rdata;
    out->msi = t->msi;
    out->busy = t->busy;
    out->armed = t->armed;
    out->awvalid = t->m_axi_awvalid;
    out->awaddr = t->m_axi_awaddr;
    out->awlen = t->m_axi_awlen;
    out->awid = t->m_axi_awid;
    out->wvalid = t->m_axi_wvalid;
    out->wstrb = t->m_axi_wstrb;
    out->wlast = t->m_axi_wlast;
    from_wide(out->wdata, t->m_axi_wdata);
    out->bready = t->m_axi_bready;
    out->arvalid = t->m_axi_arvalid;
    out->araddr = t->m_axi_araddr;
    out->arlen = t->m_axi_arlen;
    out->arid = t->m_axi_arid;
    out->rready = t->m_axi_rready;
    out->tx_valid[0] = t->link0_tx_tvalid;
    out->tx_valid[1] = t->link1_tx_tvalid;
    out->tx_last[0] = t->link0_tx_tlast;
    out->tx_last[1] = t->link1_tx_tlast;
    out->tx_keep[0] = t->link0_tx_tkeep;
    out->tx_keep[1] = t->link1_tx_tkeep;
    from_wide(out->tx_data[0], t->link0_tx_tdata);
    from_wide(out->tx_data[1], t->link1_tx_tdata);
    out->kam_valid = t->kam_valid;
    out->kcmd_ready = t->kcmd_ready;
    out->kc_valid = t->kc_valid;
    if (t->kam_valid) {
        out->kam_src = t->kam_src;
        out->kam_handler = t->kam_handler;
        out->kam_nargs = t->kam_nargs;
        for (int i = 0; i < 16; i++) out->kam_args[i] = t->kam_args[i];
    }
    if (t->kc_valid) {
        for (int i = 0; i < 7; i++) out->kc_entry[i] = t->kc_entry[i];
    }

    t->clk = 1;
    t->eval();
}

extern "C" void fs_model_layout(uint32_t *in_size, uint32_t *out_size, uint32_t *beat) {
    *in_size = sizeof(fs_in);
    *out_size = sizeof(fs_out);
    *beat = FS_BEAT;
}
