// fshmem GASNet core: the board side of spec/registers.md and the packet
// engine of spec/wire.md, for a PCIe FPGA board with two network ports.
//
// Interfaces
//   clk, rst_n       core clock and synchronous active-low reset
//   tick_us          one-cycle pulse per microsecond: the link timers' timebase
//   strap_*          board straps: reset values of NODE_ID / NODE_COUNT, and
//                    WINDOW_SIZE (bytes of DDR behind BAR2)
//   *_ticks, *_cycles  link timing (retransmission timeout and its cap, peer
//                    timeout, delayed-ACK limit, NACK hold-off)
//   bar0_*           BAR0 target: one 32-bit register or ring access per cycle,
//                    read data in the next cycle (the PCIe shell's BAR0 window)
//   msi              one-cycle pulse when an unmasked IRQ_STATUS bit becomes set
//   m_axi_*          AXI4 master to board memory (the BAR2 DDR window), DW bits
//                    wide, INCR bursts of up to 256 beats that never cross 4 KiB
//   linkN_tx_*, linkN_rx_*  AXI4-Stream ports of the two network links, DW bits,
//                    one spec/wire.md frame per packet (tlast), tkeep per byte;
//                    the receive side is always ready and registered at the edge
//   link_*           port status from the PHY (up, module present, rate, peer)
//   strap_compute    a compute kernel sits on the kernel port (CAPS.COMPUTE)
//   kam_*, kcmd_*, kc_*  the kernel port, for user logic beside the core (a
//                    compute kernel such as a GEMM tile engine): requests to
//                    handlers 224..255 out (kam_*, with strap_compute); command
//                    descriptors in, in the command queue's slot format
//                    (kcmd_*: a descriptor and, for a chained AM, its
//                    continuation; valid held until ready); their completion
//                    entries out (kc_*: bytes 0..25 of a completion entry, no
//                    phase); and an error strobe in (kerr_*: a request the
//                    kernel dropped because it could neither run nor answer
//                    it, which sets ERR_STATUS.COMPUTE with ERR_INFO =
//                    kerr_info, spec/registers.md section 4.4.1). The kernel
//                    reaches board memory through its own port of the shell
//                    and writes what a command reads before it submits the
//                    command.
//   busy             some work is in progress (simulation: keep clocking)
//   armed            frames wait for their acknowledgement and only the tick
//                    moves their timers (simulation: clock as the tick comes)
//
// Blocks
//   fs_regs        register file, soft reset        fs_rings      SQ/CQ/RQ rings
//   fs_cmd_fetch   command queue fetch              fs_sched      scheduler
//   fs_cq_writer   completion writer                fs_builder    AM sequencers: requests, responses
//   fs_tx_arb      transmit buffer write grant      fs_link_tx    retransmit buffer and sender
//   fs_link_rx     receivers (x2)                   fs_link_ctl   reliability state per peer
//   fs_loop        loopback queues (x2)             fs_dispatch   receive handler, atomic unit
//   fs_axi_rd_arb  memory read share (x2)
`default_nettype none
`include "fs_defs.vh"

module fshmem_core #(
    parameter integer DW        = 256,         // datapath bits (32 bytes per cycle)
    parameter integer AW        = 40,          // board memory address bits
    parameter integer MAX_NODES = 16,          // nodes a job may have (NODE_COUNT limit)
    parameter integer FRAG      = 4096,        // largest payload per frame
    parameter integer CMDS      = 32,          // commands in flight
    parameter integer PIECES    = 16,          // system requests awaiting a response
    parameter integer TXB       = 2048,        // retransmit buffer beats
    parameter integer TXQ       = 64,          // retransmit buffer frames
    parameter integer RXB       = 512,         // receive buffer beats per port
    parameter integer RXF       = 16,          // receive buffer frames per port
    parameter integer LBB       = 256,         // loopback buffer beats (each of two)
    parameter [31:0]  BUILD_ID  = 32'h5254_0001
) (
    input  wire            clk,
    input  wire            rst_n,
    input  wire            tick_us,
    input  wire [15:0]     strap_node_id,
    input  wire [16:0]     strap_node_count,
    input  wire [63:0]     strap_window_size,
    input  wire [31:0]     rto_ticks,
    input  wire [31:0]     rto_max_ticks,
    input  wire [31:0]     peer_timeout_ticks,
    input  wire [15:0]     ack_delay_cycles,
    input  wire [15:0]     nack_hold_ticks,
    // BAR0.
    input  wire            bar0_valid,
    input  wire            bar0_write,
    input  wire [15:0]     bar0_addr,
    input  wire [31:0]     bar0_wdata,
    output wire            bar0_rvalid,
    output wire [31:0]     bar0_rdata,
    output wire            msi,
    // AXI4 master: board memory.
    output wire            m_axi_awvalid,
    input  wire            m_axi_awready,
    output wire [AW-1:0]   m_axi_awaddr,
    output wire [7:0]      m_axi_awlen,
    output wire [2:0]      m_axi_awsize,
    output wire [1:0]      m_axi_awburst,
    output wire [1:0]      m_axi_awid,
    output wire            m_axi_wvalid,
    input  wire            m_axi_wready,
    output wire [DW-1:0]   m_axi_wdata,
    output wire [DW/8-1:0] m_axi_wstrb,
    output wire            m_axi_wlast,
    input  wire            m_axi_bvalid,
    output wire            m_axi_bready,
    input  wire [1:0]      m_axi_bresp,
    input  wire [1:0]      m_axi_bid,
    output wire            m_axi_arvalid,
    input  wire            m_axi_arready,
    output wire [AW-1:0]   m_axi_araddr,
    output wire [7:0]      m_axi_arlen,
    output wire [2:0]      m_axi_arsize,
    output wire [1:0]      m_axi_arburst,
    output wire [2:0]      m_axi_arid,
    input  wire            m_axi_rvalid,
    output wire            m_axi_rready,
    input  wire [DW-1:0]   m_axi_rdata,
    input  wire [1:0]      m_axi_rresp,
    input  wire            m_axi_rlast,
    input  wire [2:0]      m_axi_rid,
    // Link port 0.
    output wire            link0_tx_tvalid,
    input  wire            link0_tx_tready,
    output wire [DW-1:0]   link0_tx_tdata,
    output wire [DW/8-1:0] link0_tx_tkeep,
    output wire            link0_tx_tlast,
    input  wire            link0_rx_tvalid,
    input  wire [DW-1:0]   link0_rx_tdata,
    input  wire [DW/8-1:0] link0_rx_tkeep,
    input  wire            link0_rx_tlast,
    // Link port 1.
    output wire            link1_tx_tvalid,
    input  wire            link1_tx_tready,
    output wire [DW-1:0]   link1_tx_tdata,
    output wire [DW/8-1:0] link1_tx_tkeep,
    output wire            link1_tx_tlast,
    input  wire            link1_rx_tvalid,
    input  wire [DW-1:0]   link1_rx_tdata,
    input  wire [DW/8-1:0] link1_rx_tkeep,
    input  wire            link1_rx_tlast,
    // Port status.
    input  wire [1:0]      link_up,
    input  wire [1:0]      link_present,
    input  wire [15:0]     link_rate,
    input  wire [31:0]     link_peer,
    // Kernel port.
    input  wire            strap_compute,
    output wire            kam_valid,
    input  wire            kam_ready,
    output wire [15:0]     kam_src,
    output wire [7:0]      kam_handler,
    output wire [4:0]      kam_nargs,
    output wire [511:0]    kam_args,
    input  wire            kcmd_valid,
    output wire            kcmd_ready,
    input  wire [511:0]    kcmd_desc,
    input  wire [511:0]    kcmd_cont,
    output wire            kc_valid,
    input  wire            kc_ready,
    output wire [207:0]    kc_entry,
    input  wire            kerr_valid,
    input  wire [31:0]     kerr_info,
    output wire            busy,
    output wire            armed
);
    localparam integer B     = DW / 8;
    localparam integer LB    = $clog2(B);
    localparam integer NB    = $clog2(MAX_NODES);
    localparam integer FRAME_I = (FRAG + 104 + 4 + B - 1) / B;   // largest frame, beats
    localparam [31:0]  CAPS  = 32'h0000_0204;   // two ports (11:8), MSI (bit 2)

    assign m_axi_awsize  = LB[2:0];
    assign m_axi_arsize  = LB[2:0];
    assign m_axi_awburst = 2'b01;
    assign m_axi_arburst = 2'b01;
    wire [1:0] unused_bid   = m_axi_bid;
    wire       unused_rlast = m_axi_rlast;

    // ---- registers and reset --------------------------------------------------------------
    wire        srst, enabled;
    wire [15:0] node_id;
    wire [16:0] node_count;
    wire [63:0] seg_base, seg_size, rx_bounce;
    wire [7:0]  sq_tail, sq_tail_nx, sq_head, cq_head, cq_tail;
    wire [5:0]  rq_head, rq_tail;
    wire        st_idle, cq_stall, rq_stall;
    wire        sq_we, cq_re, rq_re, clr;
    wire [7:0]  sq_widx, cq_ridx, clr_idx;
    wire [3:0]  sq_wword;
    wire [31:0] sq_wdata;
    wire [5:0]  rq_ridx;
    wire [255:0]  cq_rdata;
    wire [1023:0] rq_rdata;
    wire        ev_cq, ev_rq, ev_timeout, ev_bad_packet, ev_bad_port, mem_err;
    wire [15:0] ev_timeout_peer;
    wire        cnt_cmd, cnt_err, cnt_ptx, cnt_rtx;
    wire [16:0] cnt_btx;
    wire [1:0]  acc, crc_err, bad_pkt;
    wire [33:0] acc_bytes;
    wire        rst = !rst_n;
    wire        crst = rst || srst;          // the core proper, held in soft reset

    fs_regs #(.BUILD_ID(BUILD_ID), .CAPS(CAPS), .MAX_NODES(MAX_NODES)) regs (
        .clk(clk), .rst(rst), .tick_us(tick_us),
        .bar0_valid(bar0_valid), .bar0_write(bar0_write), .bar0_addr(bar0_addr),
        .bar0_wdata(bar0_wdata), .bar0_rvalid(bar0_rvalid), .bar0_rdata(bar0_rdata),
        .strap_node_id(strap_node_id), .strap_node_count(strap_node_count),
        .window_size(strap_window_size), .link_up(link_up), .link_present(link_present),
        .link_rate(link_rate), .link_peer(link_peer), .strap_compute(strap_compute),
        .srst(srst), .enabled(enabled), .node_id(node_id), .node_count(node_count),
        .seg_base(seg_base), .seg_size(seg_size), .rx_bounce(rx_bounce),
        .sq_tail(sq_tail), .sq_tail_nx(sq_tail_nx), .sq_head(sq_head), .cq_head(cq_head), .cq_tail(cq_tail),
        .rq_head(rq_head), .rq_tail(rq_tail),
        .st_idle(st_idle), .st_cq_stall(cq_stall), .st_rq_stall(rq_stall),
        .sq_we(sq_we), .sq_widx(sq_widx), .sq_wword(sq_wword), .sq_wdata(sq_wdata),
        .cq_re(cq_re), .cq_ridx(cq_ridx), .cq_rdata(cq_rdata),
        .rq_re(rq_re), .rq_ridx(rq_ridx), .rq_rdata(rq_rdata),
        .clr(clr), .clr_idx(clr_idx),
        .ev_cq(ev_cq), .ev_rq(ev_rq), .ev_ddr(rd_err || mem_err), .ev_ddr_info(32'd0),
        .ev_peer_timeout(ev_timeout), .ev_peer(ev_timeout_peer),
        .ev_bad_packet(ev_bad_packet || |bad_pkt), .ev_bad_port(ev_bad_packet ? ev_bad_port : bad_pkt[1]),
        .ev_internal(1'b0), .ev_compute(kerr_valid && strap_compute), .ev_compute_info(kerr_info),
        .cnt_cmd(cnt_cmd), .cnt_err(cnt_err), .cnt_ptx(cnt_ptx), .cnt_prx(|acc),
        .cnt_btx(cnt_btx), .cnt_brx((acc[0] ? acc_bytes[16:0] : 17'd0) + (acc[1] ? acc_bytes[33:17] : 17'd0)),
        .cnt_rtx(cnt_rtx), .cnt_stall(cq_stall || rq_stall), .crc_err(crc_err), .msi(msi)
    );

    // ---- rings, fetch, scheduler, completions -------------------------------------------
    wire         sq_re;
    wire [7:0]   sq_ridx;
    wire [511:0] sq_rdata;
    wire         cq_we, rq_we;
    wire [7:0]   cq_widx;
    wire [255:0] cq_wdata;
    wire [5:0]   rq_widx;
    wire [1023:0] rq_wdata;

    fs_rings rings (
        .clk(clk), .clr(clr), .clr_idx(clr_idx),
        .sq_we(sq_we), .sq_widx(sq_widx), .sq_wword(sq_wword), .sq_wdata(sq_wdata),
        .sq_re(sq_re), .sq_ridx(sq_ridx), .sq_rdata(sq_rdata),
        .cq_we(cq_we), .cq_widx(cq_widx), .cq_wdata(cq_wdata),
        .cq_re(cq_re), .cq_ridx(cq_ridx), .cq_rdata(cq_rdata),
        .rq_we(rq_we), .rq_widx(rq_widx), .rq_wdata(rq_wdata),
        .rq_re(rq_re), .rq_ridx(rq_ridx), .rq_rdata(rq_rdata)
    );

    wire         d_valid, d_ready;
    wire [511:0] d_head, d_cont;
    wire [7:0]   d_index;
    fs_cmd_fetch fetch (
        .clk(clk), .rst(crst), .enabled(enabled), .sq_tail(sq_tail), .sq_tail_nx(sq_tail_nx),
        .sq_head(sq_head),
        .sq_re(sq_re), .sq_ridx(sq_ridx), .sq_rdata(sq_rdata),
        .d_valid(d_valid), .d_ready(d_ready), .d_head(d_head), .d_cont(d_cont), .d_index(d_index)
    );

    // Two sources of descriptors, the host's queue and the kernel port, in
    // turn when both wait. A source presented to the scheduler stays
    // selected until its descriptor is taken (a Put issued in pieces is
    // decoded from it for many cycles).
    reg  m_lock, m_lock_k, k_turn;
    wire m_ready;
    wire take_k  = m_lock ? m_lock_k : kcmd_valid && (!d_valid || k_turn);
    wire m_valid = take_k ? kcmd_valid : d_valid;
    assign d_ready    = m_ready && !take_k;
    assign kcmd_ready = m_ready && take_k;
    always @(posedge clk) begin
        if (crst) begin
            m_lock <= 1'b0; m_lock_k <= 1'b0; k_turn <= 1'b0;
        end else begin
            m_lock   <= m_valid && !m_ready;
            m_lock_k <= take_k;
            if (m_valid && m_ready) k_turn <= !take_k;
        end
    end

    wire [MAX_NODES-1:0] dead;
    wire           j_valid, j_ready, n_valid, n_ready, s_valid, s_ready, s_has_value;
    wire [`JW-1:0] j_data;
    wire [6:0]     n_note;
    wire [31:0]    lk_token, s_token, s_code;
    wire           lk_hit;
    wire [15:0]    lk_peer;
    wire [1:0]     lk_kind;
    wire [63:0]    lk_local, s_value;
    wire [16:0]    lk_len;
    wire           c_valid, c_ready, c_src, cq_in_ready, sched_idle;
    wire [`CW-1:0] c_data;

    fs_sched #(.CMDS(CMDS), .PIECES(PIECES), .MAX_NODES(MAX_NODES)) sched (
        .clk(clk), .rst(crst), .enabled(enabled), .node_count(node_count),
        .seg_base(seg_base), .seg_size(seg_size), .dead(dead),
        .d_valid(m_valid), .d_ready(m_ready), .d_head(take_k ? kcmd_desc : d_head),
        .d_cont(take_k ? kcmd_cont : d_cont), .d_index(take_k ? 8'd0 : d_index), .d_src(take_k),
        .j_valid(j_valid), .j_ready(j_ready), .j_data(j_data),
        .n_valid(n_valid), .n_ready(n_ready), .n_note(n_note),
        .lk_token(lk_token), .lk_hit(lk_hit), .lk_peer(lk_peer), .lk_kind(lk_kind),
        .lk_local(lk_local), .lk_len(lk_len),
        .s_valid(s_valid), .s_ready(s_ready), .s_token(s_token), .s_code(s_code),
        .s_value(s_value), .s_has_value(s_has_value),
        .c_valid(c_valid), .c_ready(c_ready), .c_data(c_data), .c_src(c_src),
        .cnt_cmd(cnt_cmd), .cnt_err(cnt_err), .idle(sched_idle)
    );
    assign st_idle = sched_idle && sq_head == sq_tail;

    // Completions of the kernel's commands go back to the kernel port.
    assign c_ready  = c_src ? kc_ready : cq_in_ready;
    assign kc_valid = c_valid && c_src;
    assign kc_entry = c_data;
    fs_cq_writer cqw (
        .clk(clk), .rst(crst), .in_valid(c_valid && !c_src), .in_ready(cq_in_ready), .in_data(c_data),
        .cq_head(cq_head), .cq_tail(cq_tail), .cq_we(cq_we), .cq_widx(cq_widx),
        .cq_wdata(cq_wdata), .ev_cq(ev_cq), .stall(cq_stall)
    );

    // ---- AM sequencers: requests (scheduler jobs) and responses (dispatcher jobs) ----
    wire           r_valid, r_ready;
    wire [`JW-1:0] r_data;
    wire           space_tx, space_lbq, space_lbr;
    wire [1:0]     tx_req, tx_gnt;
    wire [1:0]     fo_valid, fo_last, fo_jlast, fo_loop, bld_idle, bld_rd_err, bld_rd_done;
    wire [2*DW-1:0] fo_data;
    wire [31:0]    fo_dst;
    wire [35:0]    fo_len;
    wire [17:0]    fo_beats;
    wire [33:0]    fo_plen;
    wire [2*`FIW-1:0] fo_fi;
    wire [1:0]     fo_ct, fo_hold;
    wire           tb_ct, tb_hold, resp_release;
    wire [1:0]     b_arvalid, b_arready, b_rvalid, b_rready, b_arid;
    wire [2*AW-1:0] b_araddr;
    wire [15:0]    b_arlen;
    wire           rd_err = |bld_rd_err;
    wire [6:0]     unused_note;

    // Index 0: responses, index 1: requests (the transmit grant favours 0).
    fs_builder #(.DW(DW), .AW(AW), .IDW(1), .ID(1'b0), .FRAG(FRAG)) bld_resp (
        .clk(clk), .rst(crst), .node_id(node_id),
        .q_valid(r_valid), .q_ready(r_ready), .q_data(r_data),
        .n_valid(unused_n_valid), .n_ready(1'b1), .n_note(unused_note),
        .tx_req(tx_req[0]), .tx_gnt(tx_gnt[0]), .space_tx(space_tx), .space_lb(space_lbr),
        .fo_valid(fo_valid[0]), .fo_data(fo_data[0 +: DW]), .fo_last(fo_last[0]), .fo_jlast(fo_jlast[0]),
        .fo_loop(fo_loop[0]), .fo_dst(fo_dst[0 +: 16]), .fo_len(fo_len[0 +: 18]),
        .fo_beats(fo_beats[0 +: 9]), .fo_plen(fo_plen[0 +: 17]), .fo_fi(fo_fi[0 +: `FIW]),
        .fo_ct(fo_ct[0]), .fo_hold(fo_hold[0]),
        .idle(bld_idle[0]), .rd_done(bld_rd_done[0]), .rd_err(bld_rd_err[0]),
        .m_arvalid(b_arvalid[0]), .m_arready(b_arready[0]), .m_araddr(b_araddr[0 +: AW]),
        .m_arlen(b_arlen[0 +: 8]), .m_arid(b_arid[0]), .m_rvalid(b_rvalid[0]),
        .m_rready(b_rready[0]), .m_rdata(m_axi_rdata), .m_rresp(m_axi_rresp)
    );
    wire unused_n_valid;
    wire unused_req_rd_done = bld_rd_done[1];
    fs_builder #(.DW(DW), .AW(AW), .IDW(1), .ID(1'b0), .FRAG(FRAG)) bld_req (
        .clk(clk), .rst(crst), .node_id(node_id),
        .q_valid(j_valid), .q_ready(j_ready), .q_data(j_data),
        .n_valid(n_valid), .n_ready(n_ready), .n_note(n_note),
        .tx_req(tx_req[1]), .tx_gnt(tx_gnt[1]), .space_tx(space_tx), .space_lb(space_lbq),
        .fo_valid(fo_valid[1]), .fo_data(fo_data[DW +: DW]), .fo_last(fo_last[1]), .fo_jlast(fo_jlast[1]),
        .fo_loop(fo_loop[1]), .fo_dst(fo_dst[16 +: 16]), .fo_len(fo_len[18 +: 18]),
        .fo_beats(fo_beats[9 +: 9]), .fo_plen(fo_plen[17 +: 17]), .fo_fi(fo_fi[`FIW +: `FIW]),
        .fo_ct(fo_ct[1]), .fo_hold(fo_hold[1]),
        .idle(bld_idle[1]), .rd_done(bld_rd_done[1]), .rd_err(bld_rd_err[1]),
        .m_arvalid(b_arvalid[1]), .m_arready(b_arready[1]), .m_araddr(b_araddr[AW +: AW]),
        .m_arlen(b_arlen[8 +: 8]), .m_arid(b_arid[1]), .m_rvalid(b_rvalid[1]),
        .m_rready(b_rready[1]), .m_rdata(m_axi_rdata), .m_rresp(m_axi_rresp)
    );

    wire           tb_valid, tb_last;
    wire [DW-1:0]  tb_data;
    wire [15:0]    tb_dst;
    wire [17:0]    tb_len;
    wire [8:0]     tb_beats;
    wire [16:0]    tb_plen;
    fs_tx_arb #(.DW(DW)) txarb (
        .clk(clk), .rst(crst), .space(space_tx), .req(tx_req), .gnt(tx_gnt),
        .fo_valid(fo_valid), .fo_data(fo_data), .fo_last(fo_last), .fo_jlast(fo_jlast),
        .fo_loop(fo_loop), .fo_dst(fo_dst), .fo_len(fo_len), .fo_beats(fo_beats), .fo_plen(fo_plen),
        .fo_ct(fo_ct), .fo_hold(fo_hold),
        .o_valid(tb_valid), .o_data(tb_data), .o_last(tb_last), .o_dst(tb_dst),
        .o_len(tb_len), .o_beats(tb_beats), .o_plen(tb_plen), .o_ct(tb_ct), .o_hold(tb_hold)
    );

    // ---- loopback queues --------------------------------------------------------------------
    wire [3:0]        fi_valid, fi_ready, bt_valid, bt_ready;
    wire [4*`FIW-1:0] fi_data;
    wire [4*DW-1:0]   bt_data;

    fs_loop #(.DW(DW), .BUF(LBB), .FRAME(FRAME_I)) lbq (
        .clk(clk), .rst(crst),
        .wr_en(fo_valid[1] && fo_loop[1]), .wr_data(fo_data[DW +: DW]), .wr_last(fo_last[1]),
        .wr_fi(fo_fi[`FIW +: `FIW]), .space(space_lbq),
        .fi_valid(fi_valid[2]), .fi_ready(fi_ready[2]), .fi_data(fi_data[2*`FIW +: `FIW]),
        .bt_valid(bt_valid[2]), .bt_ready(bt_ready[2]), .bt_data(bt_data[2*DW +: DW])
    );
    fs_loop #(.DW(DW), .BUF(LBB), .FRAME(FRAME_I)) lbr (
        .clk(clk), .rst(crst),
        .wr_en(fo_valid[0] && fo_loop[0]), .wr_data(fo_data[0 +: DW]), .wr_last(fo_last[0]),
        .wr_fi(fo_fi[0 +: `FIW]), .space(space_lbr),
        .fi_valid(fi_valid[3]), .fi_ready(fi_ready[3]), .fi_data(fi_data[3*`FIW +: `FIW]),
        .bt_valid(bt_valid[3]), .bt_ready(bt_ready[3]), .bt_data(bt_data[3*DW +: DW])
    );

    // ---- links ---------------------------------------------------------------------------------
    wire           tc_valid, as_valid, ack_urgent, ack_any, nack_req, nack_sent;
    wire           rt_valid, rt_all, rt_take, tx_busy;
    wire [NB-1:0]  tc_peer, q_peer, f_peer, as_peer;
    wire [31:0]    tc_seq, q_ack, f_una, nack_ack, rt_base;
    wire [15:0]    ack_peer, nack_peer, rt_peer;
    wire [5:0]     nack_words;
    wire [1023:0]  nack_bitmap, rt_bitmap;

    fs_link_tx #(.DW(DW), .TXB(TXB), .TXQ(TXQ), .FRAG(FRAG), .MAX_NODES(MAX_NODES)) ltx (
        .clk(clk), .rst(crst), .node_id(node_id),
        .fo_valid(tb_valid), .fo_data(tb_data), .fo_last(tb_last), .fo_loop(1'b0),
        .fo_dst(tb_dst), .fo_len(tb_len), .fo_beats(tb_beats), .fo_plen(tb_plen),
        .fo_ct(tb_ct), .fo_hold(tb_hold), .space(space_tx), .held_go(resp_release),
        .tc_valid(tc_valid), .tc_peer(tc_peer), .tc_seq(tc_seq), .dead(dead),
        .q_peer(q_peer), .q_ack(q_ack), .f_peer(f_peer), .f_una(f_una),
        .as_valid(as_valid), .as_peer(as_peer),
        .ack_urgent(ack_urgent), .ack_any(ack_any), .ack_peer(ack_peer),
        .nack_req(nack_req), .nack_peer(nack_peer), .nack_ack(nack_ack), .nack_words(nack_words),
        .nack_bitmap(nack_bitmap), .nack_sent(nack_sent),
        .rt_valid(rt_valid), .rt_peer(rt_peer), .rt_all(rt_all), .rt_base(rt_base),
        .rt_bitmap(rt_bitmap), .rt_take(rt_take),
        .tx0_valid(link0_tx_tvalid), .tx0_ready(link0_tx_tready), .tx0_data(link0_tx_tdata),
        .tx0_keep(link0_tx_tkeep), .tx0_last(link0_tx_tlast),
        .tx1_valid(link1_tx_tvalid), .tx1_ready(link1_tx_tready), .tx1_data(link1_tx_tdata),
        .tx1_keep(link1_tx_tkeep), .tx1_last(link1_tx_tlast),
        .cnt_ptx(cnt_ptx), .cnt_btx(cnt_btx), .cnt_rtx(cnt_rtx), .busy(tx_busy),
        .armed(armed)
    );

    wire [1:0]    ev_valid, ev_ctrl, ev_nack, ev_stored, ev_accept;
    wire [31:0]   ev_src;
    wire [63:0]   ev_seq, ev_ack;
    wire [5:0]    ev_flags;
    wire [11:0]   ev_words;
    wire [2047:0] ev_bitmap;

    // The receive ports are registered at the core's edge: a beat reaches
    // its receiver (CRC, header checks) the cycle after it arrives, so no
    // path runs from a port's pins through the receiver's logic.
    reg  [1:0]      rxr_valid, rxr_last;
    reg  [DW-1:0]   rxr_data0, rxr_data1;
    reg  [DW/8-1:0] rxr_keep0, rxr_keep1;
    always @(posedge clk) begin
        rxr_valid <= crst ? 2'b00 : {link1_rx_tvalid, link0_rx_tvalid};
        rxr_last  <= {link1_rx_tlast, link0_rx_tlast};
        rxr_data0 <= link0_rx_tdata;  rxr_data1 <= link1_rx_tdata;
        rxr_keep0 <= link0_rx_tkeep;  rxr_keep1 <= link1_rx_tkeep;
    end

    fs_link_rx #(.DW(DW), .BUF(RXB), .FIDEPTH(RXF), .FRAG(FRAG)) lrx0 (
        .clk(clk), .rst(crst), .node_id(node_id), .node_count(node_count),
        .rx_valid(rxr_valid[0]), .rx_data(rxr_data0), .rx_keep(rxr_keep0),
        .rx_last(rxr_last[0]),
        .ev_valid(ev_valid[0]), .ev_ctrl(ev_ctrl[0]), .ev_nack(ev_nack[0]), .ev_src(ev_src[15:0]),
        .ev_seq(ev_seq[31:0]), .ev_flags(ev_flags[2:0]), .ev_ack(ev_ack[31:0]),
        .ev_stored(ev_stored[0]), .ev_words(ev_words[5:0]), .ev_bitmap(ev_bitmap[1023:0]),
        .ev_accept(ev_accept[0]), .crc_err(crc_err[0]), .bad_pkt(bad_pkt[0]),
        .acc(acc[0]), .acc_bytes(acc_bytes[16:0]),
        .fi_valid(fi_valid[0]), .fi_ready(fi_ready[0]), .fi_data(fi_data[0 +: `FIW]),
        .bt_valid(bt_valid[0]), .bt_ready(bt_ready[0]), .bt_data(bt_data[0 +: DW])
    );
    fs_link_rx #(.DW(DW), .BUF(RXB), .FIDEPTH(RXF), .FRAG(FRAG)) lrx1 (
        .clk(clk), .rst(crst), .node_id(node_id), .node_count(node_count),
        .rx_valid(rxr_valid[1]), .rx_data(rxr_data1), .rx_keep(rxr_keep1),
        .rx_last(rxr_last[1]),
        .ev_valid(ev_valid[1]), .ev_ctrl(ev_ctrl[1]), .ev_nack(ev_nack[1]), .ev_src(ev_src[31:16]),
        .ev_seq(ev_seq[63:32]), .ev_flags(ev_flags[5:3]), .ev_ack(ev_ack[63:32]),
        .ev_stored(ev_stored[1]), .ev_words(ev_words[11:6]), .ev_bitmap(ev_bitmap[2047:1024]),
        .ev_accept(ev_accept[1]), .crc_err(crc_err[1]), .bad_pkt(bad_pkt[1]),
        .acc(acc[1]), .acc_bytes(acc_bytes[33:17]),
        .fi_valid(fi_valid[1]), .fi_ready(fi_ready[1]), .fi_data(fi_data[`FIW +: `FIW]),
        .bt_valid(bt_valid[1]), .bt_ready(bt_ready[1]), .bt_data(bt_data[DW +: DW])
    );

    wire nack_owed;
    fs_link_ctl #(.MAX_NODES(MAX_NODES)) lctl (
        .clk(clk), .rst(crst), .enabled(enabled), .tick(tick_us),
        .rto_ticks(rto_ticks), .rto_max_ticks(rto_max_ticks), .peer_timeout_ticks(peer_timeout_ticks),
        .ack_delay_cycles(ack_delay_cycles), .nack_hold_ticks(nack_hold_ticks),
        .ev_valid(ev_valid), .ev_ctrl(ev_ctrl), .ev_nack(ev_nack), .ev_src(ev_src), .ev_seq(ev_seq),
        .ev_flags(ev_flags), .ev_ack(ev_ack), .ev_stored(ev_stored), .ev_words(ev_words),
        .ev_bitmap(ev_bitmap), .ev_accept(ev_accept),
        .tc_valid(tc_valid), .tc_peer(tc_peer), .tc_seq(tc_seq),
        .q_peer(q_peer), .q_ack(q_ack), .f_peer(f_peer), .f_una(f_una), .dead(dead),
        .as_valid(as_valid), .as_peer(as_peer),
        .ack_urgent(ack_urgent), .ack_any(ack_any), .ack_peer(ack_peer),
        .nack_req(nack_req), .nack_peer(nack_peer), .nack_ack(nack_ack), .nack_words(nack_words),
        .nack_bitmap(nack_bitmap), .nack_sent(nack_sent),
        .rt_valid(rt_valid), .rt_peer(rt_peer), .rt_all(rt_all), .rt_base(rt_base),
        .rt_bitmap(rt_bitmap), .rt_take(rt_take),
        .nack_owed(nack_owed), .ev_timeout(ev_timeout), .ev_timeout_peer(ev_timeout_peer)
    );

    // ---- dispatcher and memory -----------------------------------------------------------------
    wire          a_arvalid, a_arready, a_rvalid, a_rready;
    wire [AW-1:0] a_araddr;
    wire [7:0]    a_arlen;
    wire          a_arid;
    wire          disp_idle;

    fs_dispatch #(.DW(DW), .AW(AW), .IDW(1), .ID(1'b0)) disp (
        .clk(clk), .rst(crst), .node_id(node_id), .seg_base(seg_base), .seg_size(seg_size),
        .rx_bounce(rx_bounce), .compute(strap_compute),
        .fi_valid(fi_valid), .fi_ready(fi_ready), .fi_data(fi_data),
        .bt_valid(bt_valid), .bt_ready(bt_ready), .bt_data(bt_data),
        .r_valid(r_valid), .r_ready(r_ready), .r_data(r_data), .held_go(resp_release),
        .lk_token(lk_token), .lk_hit(lk_hit), .lk_peer(lk_peer), .lk_kind(lk_kind),
        .lk_local(lk_local), .lk_len(lk_len),
        .s_valid(s_valid), .s_ready(s_ready), .s_token(s_token), .s_code(s_code),
        .s_value(s_value), .s_has_value(s_has_value),
        .rq_head(rq_head), .rq_tail(rq_tail), .rq_we(rq_we), .rq_widx(rq_widx), .rq_wdata(rq_wdata),
        .ev_rq(ev_rq), .rq_stall(rq_stall),
        .kam_valid(kam_valid), .kam_ready(kam_ready), .kam_src(kam_src), .kam_handler(kam_handler),
        .kam_nargs(kam_nargs), .kam_args(kam_args), .ev_bad_packet(ev_bad_packet), .ev_bad_port(ev_bad_port),
        .idle(disp_idle), .mem_err(mem_err), .reply_read(bld_rd_done[0]),
        .m_awvalid(m_axi_awvalid), .m_awready(m_axi_awready), .m_awaddr(m_axi_awaddr),
        .m_awlen(m_axi_awlen), .m_awid(m_axi_awid[0]),
        .m_wvalid(m_axi_wvalid), .m_wready(m_axi_wready), .m_wdata(m_axi_wdata),
        .m_wstrb(m_axi_wstrb), .m_wlast(m_axi_wlast),
        .m_bvalid(m_axi_bvalid), .m_bready(m_axi_bready), .m_bresp(m_axi_bresp),
        .m_arvalid(a_arvalid), .m_arready(a_arready), .m_araddr(a_araddr), .m_arlen(a_arlen),
        .m_arid(a_arid), .m_rvalid(a_rvalid), .m_rready(a_rready), .m_rdata(m_axi_rdata),
        .m_rresp(m_axi_rresp)
    );
    assign m_axi_awid[1] = 1'b0;

    // Reads: the two sequencers share one arbiter, which shares the port with
    // the atomic unit.
    wire          s_arvalid, s_arready, s_rvalid, s_rready;
    wire [AW-1:0] s_araddr;
    wire [7:0]    s_arlen;
    wire [1:0]    s_arid;
    fs_axi_rd_arb #(.AW(AW), .IDW(1)) rdarb_seq (
        .clk(clk), .rst(crst),
        .a_arvalid(b_arvalid[0]), .a_arready(b_arready[0]), .a_araddr(b_araddr[0 +: AW]),
        .a_arlen(b_arlen[0 +: 8]), .a_arid(b_arid[0]), .a_rvalid(b_rvalid[0]), .a_rready(b_rready[0]),
        .b_arvalid(b_arvalid[1]), .b_arready(b_arready[1]), .b_araddr(b_araddr[AW +: AW]),
        .b_arlen(b_arlen[8 +: 8]), .b_arid(b_arid[1]), .b_rvalid(b_rvalid[1]), .b_rready(b_rready[1]),
        .m_arvalid(s_arvalid), .m_arready(s_arready), .m_araddr(s_araddr),
        .m_arlen(s_arlen), .m_arid(s_arid), .m_rvalid(s_rvalid),
        .m_rready(s_rready), .m_rid(m_axi_rid[1:0])
    );
    fs_axi_rd_arb #(.AW(AW), .IDW(2)) rdarb (
        .clk(clk), .rst(crst),
        .a_arvalid(s_arvalid), .a_arready(s_arready), .a_araddr(s_araddr), .a_arlen(s_arlen),
        .a_arid(s_arid), .a_rvalid(s_rvalid), .a_rready(s_rready),
        .b_arvalid(a_arvalid), .b_arready(a_arready), .b_araddr(a_araddr), .b_arlen(a_arlen),
        .b_arid({1'b0, a_arid}), .b_rvalid(a_rvalid), .b_rready(a_rready),
        .m_arvalid(m_axi_arvalid), .m_arready(m_axi_arready), .m_araddr(m_axi_araddr),
        .m_arlen(m_axi_arlen), .m_arid(m_axi_arid), .m_rvalid(m_axi_rvalid),
        .m_rready(m_axi_rready), .m_rid(m_axi_rid)
    );

    assign busy = srst || |rxr_valid || !sched_idle || d_valid || kcmd_valid || sq_head != sq_tail && enabled
               || bld_idle != 2'b11
               || tx_busy || nack_owed || !disp_idle || |fi_valid || c_valid || n_valid || s_valid;
endmodule

`default_nettype wire
