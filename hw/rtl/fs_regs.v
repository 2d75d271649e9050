// BAR0 register file (spec/registers.md sections 3-4): identity,
// configuration, queue indices, DOORBELL, CTRL / STATUS, ERR_STATUS /
// ERR_INFO, IRQ_MASK / IRQ_STATUS, performance counters, link port blocks,
// and the host's window on the rings (through fs_rings). It also sequences
// the soft reset: while `srst` is high the rest of the core is held in
// reset and the completion and receive rings are zeroed.
//
// Host bus: one 32-bit access per cycle; a read's data is valid in the cycle
// after the request (bar0_rvalid).
`default_nettype none

module fs_regs #(
    parameter [31:0] BUILD_ID  = 32'h0000_0001,
    parameter [31:0] CAPS      = 32'h0000_0204,
    parameter integer MAX_NODES = 16
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          tick_us,       // one pulse per microsecond (UPTIME)
    // Host bus.
    input  wire          bar0_valid,
    input  wire          bar0_write,
    input  wire [15:0]   bar0_addr,
    input  wire [31:0]   bar0_wdata,
    output reg           bar0_rvalid,
    output wire [31:0]   bar0_rdata,
    // Board straps.
    input  wire [15:0]   strap_node_id,
    input  wire [16:0]   strap_node_count,
    input  wire [63:0]   window_size,
    input  wire [1:0]    link_up,
    input  wire [1:0]    link_present,
    input  wire [15:0]   link_rate,     // {port1, port0} Gbit/s
    input  wire [31:0]   link_peer,     // {port1, port0} node ids
    input  wire          strap_compute, // a compute kernel sits on the kernel port (CAPS.COMPUTE)
    // Configuration and control, to the core.
    output wire          srst,
    output reg           enabled,
    output reg  [15:0]   node_id,
    output reg  [16:0]   node_count,
    output reg  [63:0]   seg_base,
    output reg  [63:0]   seg_size,
    output reg  [63:0]   rx_bounce,
    output reg  [7:0]    sq_tail,
    output wire [7:0]    sq_tail_nx,    // the value sq_tail takes at this edge (a doorbell now)
    input  wire [7:0]    sq_head,
    output reg  [7:0]    cq_head,
    input  wire [7:0]    cq_tail,
    output reg  [5:0]    rq_head,
    input  wire [5:0]    rq_tail,
    input  wire          st_idle,
    input  wire          st_cq_stall,
    input  wire          st_rq_stall,
    // Host side of the rings.
    output wire          sq_we,
    output wire [7:0]    sq_widx,
    output wire [3:0]    sq_wword,
    output wire [31:0]   sq_wdata,
    output wire          cq_re,
    output wire [7:0]    cq_ridx,
    input  wire [255:0]  cq_rdata,
    output wire          rq_re,
    output wire [5:0]    rq_ridx,
    input  wire [1023:0] rq_rdata,
    output wire          clr,
    output wire [7:0]    clr_idx,
    // Events from the core.
    input  wire          ev_cq,          // a completion entry was written
    input  wire          ev_rq,          // a receive entry was written
    input  wire          ev_ddr,
    input  wire [31:0]   ev_ddr_info,
    input  wire          ev_peer_timeout,
    input  wire [15:0]   ev_peer,
    input  wire          ev_bad_packet,
    input  wire          ev_bad_port,
    input  wire          ev_internal,
    input  wire          ev_compute,     // the kernel dropped a request (ERR_STATUS.COMPUTE)
    input  wire [31:0]   ev_compute_info,
    input  wire          cnt_cmd,
    input  wire          cnt_err,
    input  wire          cnt_ptx,
    input  wire          cnt_prx,
    input  wire [16:0]   cnt_btx,
    input  wire [16:0]   cnt_brx,
    input  wire          cnt_rtx,
    input  wire          cnt_stall,
    input  wire [1:0]    crc_err,
    output reg           msi
);
    // Register offsets (section 4).
    localparam [15:0] R_MAGIC = 16'h000, R_VERSION = 16'h004, R_CAPS = 16'h008,
        R_BUILD = 16'h00C, R_NODE_ID = 16'h010, R_NODE_COUNT = 16'h014,
        R_WIN_LO = 16'h020, R_WIN_HI = 16'h024, R_SEGB_LO = 16'h028, R_SEGB_HI = 16'h02C,
        R_SEGS_LO = 16'h030, R_SEGS_HI = 16'h034, R_RXB_LO = 16'h038, R_RXB_HI = 16'h03C,
        R_SQ_BASE = 16'h040, R_SQ_SIZE = 16'h044, R_SQ_HEAD = 16'h048, R_SQ_TAIL = 16'h04C,
        R_CQ_BASE = 16'h050, R_CQ_SIZE = 16'h054, R_CQ_HEAD = 16'h058, R_CQ_TAIL = 16'h05C,
        R_RQ_BASE = 16'h060, R_RQ_SIZE = 16'h064, R_RQ_HEAD = 16'h068, R_RQ_TAIL = 16'h06C,
        R_DOORBELL = 16'h080, R_CTRL = 16'h100, R_STATUS = 16'h104, R_ERR = 16'h108,
        R_ERR_INFO = 16'h10C, R_IRQ_MASK = 16'h110, R_IRQ_STATUS = 16'h114;

    localparam [31:0] MAGIC   = 32'h4d48_5346;
    localparam [31:0] VERSION = 32'h0001_0002;   // interface 1.2
    localparam [63:0] BOUNCE_BYTES = 64'd64 * 64'd4096;

    // Error bits (section 4.4).
    localparam integer E_DOORBELL = 0, E_LOCKED = 1, E_INVALID = 2, E_DDR = 3,
        E_LINK0 = 4, E_LINK1 = 5, E_PEER = 6, E_BADPKT = 8, E_COMPUTE = 9, E_INTERNAL = 31;

    // ---- soft reset sequencer ------------------------------------------
    reg        rst_busy;
    reg  [7:0] rst_cnt;
    assign srst    = rst_busy;
    assign clr     = rst_busy;
    assign clr_idx = rst_cnt;

    wire wr = bar0_valid && bar0_write && !rst_busy;
    wire rd = bar0_valid && !bar0_write;
    wire [15:0] a = {bar0_addr[15:2], 2'b00};   // accesses are 32-bit aligned
    wire [1:0]  unused_addr_lsb = bar0_addr[1:0];

    // ---- configuration check (section 4.2) -------------------------------
    wire [64:0] seg_end    = {1'b0, seg_base} + {1'b0, seg_size};
    wire [64:0] bounce_end = {1'b0, rx_bounce} + {1'b0, BOUNCE_BYTES};
    wire        overlap    = {1'b0, rx_bounce} < seg_end && {1'b0, seg_base} < bounce_end;
    reg  [15:0] bad_reg;
    always @* begin
        bad_reg = 16'h0;
        if (node_count == 17'd0 || node_count > 17'd65535 || node_count > MAX_NODES[16:0])
            bad_reg = R_NODE_COUNT;
        else if ({1'b0, node_id} >= node_count)
            bad_reg = R_NODE_ID;
        else if (seg_base[11:0] != 12'd0)
            bad_reg = R_SEGB_LO;
        else if (seg_size == 64'd0 || seg_size[11:0] != 12'd0 || seg_end > {1'b0, window_size})
            bad_reg = R_SEGS_LO;
        else if (rx_bounce[11:0] != 12'd0 || bounce_end > {1'b0, window_size} || overlap)
            bad_reg = R_RXB_LO;
    end

    // ---- registers ---------------------------------------------------------
    reg [31:0] err_status, err_info, irq_mask, irq_status;
    reg [63:0] c_cmd, c_ptx, c_prx, c_btx, c_brx, c_rtx, c_stall, c_err;
    reg [63:0] uptime;     // microseconds since the board left reset (section 4.7)
    reg [31:0] l_crc [0:1];
    reg [31:0] l_retrain [0:1];
    reg [1:0]  l_up_q, l_seen;

    assign sq_tail_nx = (wr && a == R_DOORBELL && bar0_wdata < 32'd256 && enabled) ? bar0_wdata[7:0] : sq_tail;

    wire is_cfg = a == R_NODE_ID || a == R_NODE_COUNT || (a >= R_SEGB_LO && a <= R_RXB_HI);

    // Error and interrupt events of this cycle.
    reg [31:0] err_set, info_set;
    reg        info_any;
    always @* begin
        err_set  = 32'd0;
        info_set = 32'd0;
        info_any = 1'b0;
        if (wr && a == R_DOORBELL && bar0_wdata >= 32'd256) begin
            err_set[E_DOORBELL] = 1'b1; info_set = bar0_wdata; info_any = 1'b1;
        end
        if (wr && is_cfg && enabled) begin
            err_set[E_LOCKED] = 1'b1; info_set = {16'd0, a}; info_any = 1'b1;
        end
        if (wr && a == R_CTRL && bar0_wdata[0] && !bar0_wdata[1] && !enabled && bad_reg != 16'h0) begin
            err_set[E_INVALID] = 1'b1; info_set = {16'd0, bad_reg}; info_any = 1'b1;
        end
        if (ev_ddr) begin
            err_set[E_DDR] = 1'b1; info_set = ev_ddr_info; info_any = 1'b1;
        end
        if (l_up_q[0] && !link_up[0]) begin
            err_set[E_LINK0] = 1'b1; info_set = 32'd0; info_any = 1'b1;
        end
        if (l_up_q[1] && !link_up[1]) begin
            err_set[E_LINK1] = 1'b1; info_set = 32'd1; info_any = 1'b1;
        end
        if (ev_peer_timeout) begin
            err_set[E_PEER] = 1'b1; info_set = {16'd0, ev_peer}; info_any = 1'b1;
        end
        if (ev_bad_packet) begin
            err_set[E_BADPKT] = 1'b1; info_set = {31'd0, ev_bad_port}; info_any = 1'b1;
        end
        if (ev_compute) begin
            err_set[E_COMPUTE] = 1'b1; info_set = ev_compute_info; info_any = 1'b1;
        end
        if (ev_internal) begin
            err_set[E_INTERNAL] = 1'b1; info_set = 32'd0; info_any = 1'b1;
        end
    end

    wire [31:0] irq_set = {29'd0, err_set != 32'd0, ev_rq, ev_cq};
    wire [31:0] irq_w1c = (wr && a == R_IRQ_STATUS) ? bar0_wdata : 32'd0;
    wire [31:0] err_w1c = (wr && a == R_ERR) ? bar0_wdata : 32'd0;

    function [63:0] sat_add(input [63:0] v, input [16:0] n);
        sat_add = v + {47'd0, n};
    endfunction

    integer p;
    always @(posedge clk) begin
        if (rst || (wr && a == R_CTRL && bar0_wdata[1])) begin
            rst_busy   <= 1'b1;
            rst_cnt    <= 8'd0;
            enabled    <= 1'b0;
            node_id    <= strap_node_id;
            node_count <= strap_node_count;
            seg_base   <= 64'd0;
            seg_size   <= 64'd0;
            rx_bounce  <= 64'd0;
            sq_tail    <= 8'd0;
            cq_head    <= 8'd0;
            rq_head    <= 6'd0;
            err_status <= 32'd0;
            err_info   <= 32'd0;
            irq_mask   <= 32'h7;
            irq_status <= 32'd0;
            c_cmd <= 64'd0; c_ptx <= 64'd0; c_prx <= 64'd0; c_btx <= 64'd0;
            c_brx <= 64'd0; c_rtx <= 64'd0; c_stall <= 64'd0; c_err <= 64'd0;
            uptime <= 64'd0;
            for (p = 0; p < 2; p = p + 1) begin
                l_crc[p] <= 32'd0;
                l_retrain[p] <= 32'd0;
            end
            l_up_q <= link_up;
            l_seen <= link_up;
            msi <= 1'b0;
        end else begin
            if (rst_busy) begin
                rst_cnt <= rst_cnt + 8'd1;
                if (rst_cnt == 8'd255) rst_busy <= 1'b0;
            end
            // Host writes.
            if (wr && !enabled) begin
                case (a)
                    R_NODE_ID:    node_id <= bar0_wdata[15:0];
                    R_NODE_COUNT: node_count <= bar0_wdata[16:0];
                    R_SEGB_LO:    seg_base[31:0] <= bar0_wdata;
                    R_SEGB_HI:    seg_base[63:32] <= bar0_wdata;
                    R_SEGS_LO:    seg_size[31:0] <= bar0_wdata;
                    R_SEGS_HI:    seg_size[63:32] <= bar0_wdata;
                    R_RXB_LO:     rx_bounce[31:0] <= bar0_wdata;
                    R_RXB_HI:     rx_bounce[63:32] <= bar0_wdata;
                    default: ;
                endcase
            end
            if (wr && a == R_CTRL) begin
                if (!bar0_wdata[0]) enabled <= 1'b0;
                else if (!enabled && bad_reg == 16'h0) enabled <= 1'b1;
            end
            if (wr && a == R_DOORBELL && bar0_wdata < 32'd256 && enabled) sq_tail <= bar0_wdata[7:0];
            if (wr && a == R_CQ_HEAD) cq_head <= bar0_wdata[7:0];
            if (wr && a == R_RQ_HEAD) rq_head <= bar0_wdata[5:0];
            if (wr && a == R_IRQ_MASK) irq_mask <= {29'd0, bar0_wdata[2:0]};
            err_status <= (err_status & ~err_w1c) | err_set;
            if (info_any) err_info <= info_set;
            irq_status <= (irq_status & ~irq_w1c) | irq_set;
            msi <= (irq_set & ~irq_status & ~irq_mask) != 32'd0;
            // Counters (64-bit ones wrap, link ones saturate).
            if (tick_us) uptime <= uptime + 64'd1;
            c_cmd   <= sat_add(c_cmd, {16'd0, cnt_cmd});
            c_err   <= sat_add(c_err, {16'd0, cnt_err});
            c_ptx   <= sat_add(c_ptx, {16'd0, cnt_ptx});
            c_prx   <= sat_add(c_prx, {16'd0, cnt_prx});
            c_btx   <= sat_add(c_btx, cnt_btx);
            c_brx   <= sat_add(c_brx, cnt_brx);
            c_rtx   <= sat_add(c_rtx, {16'd0, cnt_rtx});
            c_stall <= sat_add(c_stall, {16'd0, cnt_stall});
            for (p = 0; p < 2; p = p + 1) begin
                if (crc_err[p] && l_crc[p] != 32'hFFFF_FFFF) l_crc[p] <= l_crc[p] + 32'd1;
                if (!l_up_q[p] && link_up[p] && l_seen[p] && l_retrain[p] != 32'hFFFF_FFFF)
                    l_retrain[p] <= l_retrain[p] + 32'd1;
            end
            l_up_q <= link_up;
            l_seen <= l_seen | link_up;
        end
    end

    // ---- reads -------------------------------------------------------------
    wire [31:0] status = {26'd0, err_status != 32'd0, st_rq_stall && enabled, st_cq_stall && enabled,
                          st_idle || !enabled, rst_busy, enabled};
    reg [31:0] rv;
    always @* begin
        rv = 32'd0;
        case (a)
            R_MAGIC:      rv = MAGIC;
            R_VERSION:    rv = VERSION;
            R_CAPS:       rv = CAPS | {30'd0, strap_compute, 1'b0};
            R_BUILD:      rv = BUILD_ID;
            R_NODE_ID:    rv = {16'd0, node_id};
            R_NODE_COUNT: rv = {15'd0, node_count};
            R_WIN_LO:     rv = window_size[31:0];
            R_WIN_HI:     rv = window_size[63:32];
            R_SEGB_LO:    rv = seg_base[31:0];
            R_SEGB_HI:    rv = seg_base[63:32];
            R_SEGS_LO:    rv = seg_size[31:0];
            R_SEGS_HI:    rv = seg_size[63:32];
            R_RXB_LO:     rv = rx_bounce[31:0];
            R_RXB_HI:     rv = rx_bounce[63:32];
            R_SQ_BASE:    rv = 32'h1000;
            R_SQ_SIZE:    rv = 32'd256;
            R_SQ_HEAD:    rv = {24'd0, sq_head};
            R_SQ_TAIL:    rv = {24'd0, sq_tail};
            R_CQ_BASE:    rv = 32'h5000;
            R_CQ_SIZE:    rv = 32'd256;
            R_CQ_HEAD:    rv = {24'd0, cq_head};
            R_CQ_TAIL:    rv = {24'd0, cq_tail};
            R_RQ_BASE:    rv = 32'h7000;
            R_RQ_SIZE:    rv = 32'd64;
            R_RQ_HEAD:    rv = {26'd0, rq_head};
            R_RQ_TAIL:    rv = {26'd0, rq_tail};
            R_CTRL:       rv = {30'd0, rst_busy, enabled};
            R_STATUS:     rv = status;
            R_ERR:        rv = err_status;
            R_ERR_INFO:   rv = err_info;
            R_IRQ_MASK:   rv = irq_mask;
            R_IRQ_STATUS: rv = irq_status;
            16'h200: rv = c_cmd[31:0];   16'h204: rv = c_cmd[63:32];
            16'h208: rv = c_ptx[31:0];   16'h20C: rv = c_ptx[63:32];
            16'h210: rv = c_prx[31:0];   16'h214: rv = c_prx[63:32];
            16'h218: rv = c_btx[31:0];   16'h21C: rv = c_btx[63:32];
            16'h220: rv = c_brx[31:0];   16'h224: rv = c_brx[63:32];
            16'h228: rv = c_rtx[31:0];   16'h22C: rv = c_rtx[63:32];
            16'h230: rv = c_stall[31:0]; 16'h234: rv = c_stall[63:32];
            16'h238: rv = c_err[31:0];   16'h23C: rv = c_err[63:32];
            16'h240: rv = uptime[31:0];  16'h244: rv = uptime[63:32];
            16'h300: rv = {16'd0, link_rate[7:0], 6'd0, link_present[0], link_up[0]};
            16'h304: rv = {16'd0, link_peer[15:0]};
            16'h308: rv = l_crc[0];
            16'h30C: rv = l_retrain[0];
            16'h320: rv = {16'd0, link_rate[15:8], 6'd0, link_present[1], link_up[1]};
            16'h324: rv = {16'd0, link_peer[31:16]};
            16'h328: rv = l_crc[1];
            16'h32C: rv = l_retrain[1];
            default: rv = 32'd0;
        endcase
    end

    // Ring windows: completion ring 0x5000..0x6FFF, receive ring 0x7000..0x8FFF.
    wire in_cq = a >= 16'h5000 && a < 16'h7000;
    wire in_rq = a >= 16'h7000 && a < 16'h9000;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [15:0] cq_off = a - 16'h5000;   // entry = offset / 32
    wire [15:0] rq_off = a - 16'h7000;   // entry = offset / 128
    wire [15:0] sq_off = a - 16'h1000;   // slot = offset / 64
    /* verilator lint_on UNUSEDSIGNAL */
    assign cq_re   = rd && in_cq;
    assign cq_ridx = cq_off[12:5];
    assign rq_re   = rd && in_rq;
    assign rq_ridx = rq_off[12:7];

    assign sq_we    = wr && a >= 16'h1000 && a < 16'h5000;
    assign sq_widx  = sq_off[13:6];
    assign sq_wword = a[5:2];
    assign sq_wdata = bar0_wdata;

    reg [31:0] rv_q;
    reg [1:0]  src_q;     // 0 register, 1 completion ring, 2 receive ring
    reg [4:0]  word_q;
    always @(posedge clk) begin
        bar0_rvalid <= rd;
        rv_q   <= rv;
        src_q  <= in_cq ? 2'd1 : in_rq ? 2'd2 : 2'd0;
        word_q <= a[6:2];
    end
    assign bar0_rdata = src_q == 2'd1 ? cq_rdata[32*word_q[2:0] +: 32]
                      : src_q == 2'd2 ? rq_rdata[32*word_q +: 32] : rv_q;
endmodule

`default_nettype wire
