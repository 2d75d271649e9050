// Dispatcher (the receive handler): takes whole frames, one at a time, from
// the two link receivers and the two loopback queues, and executes them
// exactly as the reference engine and the board model do
// (gasnet-core/src/engine, "Responses and errors"; spec/registers.md 6.3):
//
//   PUT request        payload written at offset; ACK [token, status] after the last fragment
//   GET request        GET_REPLY [token] job (Long at dst, or Medium); ACK on error
//   AMO request        read-modify-write of the word (fs_amo_alu); AMO_REPLY or ACK
//   PING request       ACK [token, 0]
//   ACK / AMO_REPLY    settle the piece named by the token (fs_sched)
//   GET_REPLY          payload written where the piece said; settled after the last fragment
//   other handlers     a receive entry for the host (Medium payload in the slot's
//                      bounce buffer, Long payload in the segment)
//   compute handlers   with a kernel on the kernel port (compute): requests to
//                      handlers 224..255 go to the kernel (kam_*), their payload
//                      unused, once earlier writes are committed
//
// A PUT's ACK to another node is pushed to the response sequencer as the
// frame is taken, marked held: it is built and queued for the link at once
// and fs_link_tx sends it on the release (held_go) this dispatcher gives in the cycle
// the frame's (and every earlier) write response arrives. A frame is only
// taken after it passed every check (fs_link_rx commits it at its CRC), so
// a frame that fails them never writes memory nor makes a response.
//
// A frame is taken only when what it may produce has room: a system request
// needs a place in the response queue, a host AM a free receive entry, so
// the dispatcher never stops in the middle of a frame for those. Memory
// writes of a frame are committed (all write responses back) before the
// response, settle or receive entry that reports them, and before any read
// (GET, atomic) is served, so a GET sees every earlier PUT. Conversely a
// request that writes the segment (PUT, atomic, Long AM) waits while a GET
// reply's payload is still to be read, so no GET sees a later write: a
// GET's bytes are those of the moment it was served, as in the reference
// engine.
`default_nettype none
`include "fs_defs.vh"

module fs_dispatch #(
    parameter integer DW   = 256,
    parameter integer AW   = 40,
    parameter integer IDW  = 1,
    parameter [IDW-1:0] ID = {IDW{1'b0}},
    parameter integer LB   = $clog2(DW / 8)
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [15:0]       node_id,
    input  wire [63:0]       seg_base,
    input  wire [63:0]       seg_size,
    input  wire [63:0]       rx_bounce,
    input  wire              compute,     // a kernel takes requests to handlers 224..255
    // Frame sources: 0, 1 link ports; 2 loopback requests; 3 loopback responses.
    input  wire [3:0]        fi_valid,
    output wire [3:0]        fi_ready,
    input  wire [4*`FIW-1:0] fi_data,
    input  wire [3:0]        bt_valid,
    output wire [3:0]        bt_ready,
    input  wire [4*DW-1:0]   bt_data,
    // Responses for the AM sequencer.
    output wire              r_valid,
    input  wire              r_ready,
    output wire [`JW-1:0]    r_data,
    output wire              held_go,     // the oldest held response may be sent
    // Pieces (fs_sched).
    output wire [31:0]       lk_token,
    input  wire              lk_hit,
    input  wire [15:0]       lk_peer,
    input  wire [1:0]        lk_kind,
    input  wire [63:0]       lk_local,
    input  wire [16:0]       lk_len,
    output wire              s_valid,
    input  wire              s_ready,
    output wire [31:0]       s_token,
    output wire [31:0]       s_code,
    output wire [63:0]       s_value,
    output wire              s_has_value,
    // Receive ring.
    input  wire [5:0]        rq_head,
    output reg  [5:0]        rq_tail,
    output wire              rq_we,
    output wire [5:0]        rq_widx,
    output wire [1023:0]     rq_wdata,
    output wire              ev_rq,
    output wire              rq_stall,
    // Requests for the kernel (valid until ready).
    output wire              kam_valid,
    input  wire              kam_ready,
    output wire [15:0]       kam_src,
    output wire [7:0]        kam_handler,
    output wire [4:0]        kam_nargs,
    output wire [511:0]      kam_args,
    output reg               ev_bad_packet,
    output reg               ev_bad_port,
    output wire              idle,
    output wire              mem_err,
    input  wire              reply_read,   // the response sequencer read a GET reply's payload
    // Board memory: writes, and the atomic unit's reads.
    output wire              m_awvalid,
    input  wire              m_awready,
    output wire [AW-1:0]     m_awaddr,
    output wire [7:0]        m_awlen,
    output wire [IDW-1:0]    m_awid,
    output wire              m_wvalid,
    input  wire              m_wready,
    output wire [DW-1:0]     m_wdata,
    output wire [DW/8-1:0]   m_wstrb,
    output wire              m_wlast,
    input  wire              m_bvalid,
    output wire              m_bready,
    input  wire [1:0]        m_bresp,
    output wire              m_arvalid,
    input  wire              m_arready,
    output wire [AW-1:0]     m_araddr,
    output wire [7:0]        m_arlen,
    output wire [IDW-1:0]    m_arid,
    input  wire              m_rvalid,
    output wire              m_rready,
    input  wire [DW-1:0]     m_rdata,
    input  wire [1:0]        m_rresp
);
    localparam integer B = DW / 8;
    // Classes of frame.
    localparam [3:0] C_DROP = 4'd0, C_PUT = 4'd1, C_GET = 4'd2, C_AMO = 4'd3, C_PING = 4'd4,
                     C_ACK = 4'd5, C_GREP = 4'd6, C_AREP = 4'd7, C_BADREP = 4'd8, C_USER = 4'd9,
                     C_KERN = 4'd10;

    function engine_owned(input [7:0] h);
        engine_owned = h == 8'd0 || h == `H_PUT || h == `H_GET || h == `H_GET_REPLY ||
                       h == `H_AMO || h == `H_AMO_REPLY || h == `H_ACK || h == `H_PING;
    endfunction

    // A request the kernel takes (handlers 224..255, spec/registers.md 4.1).
    function kernel_req(input on, input reply, input [7:0] h);
        kernel_req = on && !reply && h >= 8'd224;
    endfunction

    // What a frame may produce: {a segment write by a request, a receive
    // entry, a response}.
    function [2:0] needs(input reply, input [7:0] h, input last, input long, input kern);
        begin
            needs[0] = !reply && (h == `H_PUT || h == `H_GET || h == `H_AMO || h == `H_PING);
            needs[1] = !engine_owned(h) && last && !kern;
            needs[2] = (!reply && (h == `H_PUT || h == `H_AMO)) || (!engine_owned(h) && long && !kern);
        end
    endfunction

    // GET replies pushed whose payload is not read yet.
    reg  [3:0] reads_owed;

    // ---- response queue ------------------------------------------------------------
    wire            rp_push;
    reg  [`JW-1:0]  rp_job;
    wire            rp_in_ready;
    wire [2:0]      rp_count;
    fs_fifo #(.W(`JW), .DEPTH(4)) rpq (
        .clk(clk), .rst(rst),
        .in_valid(rp_push), .in_ready(rp_in_ready), .in_data(rp_job),
        .out_valid(r_valid), .out_ready(r_ready), .out_data(r_data), .count(rp_count)
    );
    wire unused_rp_ready = rp_in_ready;
    wire resp_room = rp_count < 3'd3;     // one place held for the frame in progress

    wire rq_full = rq_tail + 6'd1 == rq_head;

    // ---- frame selection -----------------------------------------------------------
    localparam [3:0] S_PICK = 4'd0, S_BEATS = 4'd1, S_DRAIN = 4'd2, S_AR = 4'd3, S_R = 4'd4,
                     S_AW = 4'd5, S_FIN = 4'd6, S_SETTLE = 4'd7, S_RQ = 4'd8,
                     S_AWAIT = 4'd10, S_AFEED = 4'd11, S_KAM = 4'd12;
    reg [3:0]  st;
    reg [1:0]  rr, sel;
    wire [3:0] elig, want_rq;
    integer s;
    genvar e;
    generate for (e = 0; e < 4; e = e + 1) begin : elig_g
        /* verilator lint_off UNUSEDSIGNAL */
        wire [`FIW-1:0] fe = fi_data[e*`FIW +: `FIW];   // type, handler and lengths used
        /* verilator lint_on UNUSEDSIGNAL */
        wire last_e = {1'b0, fe[`FI_FOFF]} + {1'b0, fe[`FI_PLEN]} == {1'b0, fe[`FI_TOTAL]};
        wire [2:0] nd = needs(fe[4], fe[`FI_HANDLER], last_e, fe[1:0] == 2'd3,
                              kernel_req(compute, fe[4], fe[`FI_HANDLER]));
        assign elig[e]    = fi_valid[e] && (!nd[0] || resp_room) && (!nd[1] || !rq_full)
                            && (!nd[2] || reads_owed == 4'd0);
        assign want_rq[e] = fi_valid[e] && nd[1] && rq_full;
    end endgenerate
    reg [1:0] pick;
    reg       pick_any;
    always @* begin
        pick_any = 1'b0; pick = 2'd0;
        for (s = 3; s >= 0; s = s - 1)
            if (elig[(rr + s[1:0]) & 2'd3]) begin pick_any = 1'b1; pick = rr + s[1:0]; end
    end

    // The frame in hand, and the view the decisions are made on: the frame
    // being picked in S_PICK (so its writes start at once), then the frame
    // in hand.
    reg [`FIW-1:0] f;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [`FIW-1:0] fv = st == S_PICK ? fi_data[pick*`FIW +: `FIW] : f;   // type bits 7:5, 3:2 implied
    /* verilator lint_on UNUSEDSIGNAL */
    wire        f_reply = fv[4];             // type bit 4
    wire [1:0]  f_cat   = fv[1:0];           // 1 Short, 2 Medium, 3 Long
    wire [7:0]  f_h     = fv[`FI_HANDLER];
    wire [15:0] f_src   = fv[`FI_SRC];
    wire [4:0]  f_nargs = fv[`FI_NARGS];
    wire [16:0] f_plen  = fv[`FI_PLEN];
    wire [16:0] f_foff  = fv[`FI_FOFF];
    wire [16:0] f_total = fv[`FI_TOTAL];
    wire [8:0]  f_beats = fv[`FI_BEATS];
    wire [63:0] f_off   = fv[`FI_OFFSET];
    wire [31:0] a0 = fv[161 +: 32], a1 = fv[193 +: 32], a2 = fv[225 +: 32], a3 = fv[257 +: 32];
    wire [31:0] a4 = fv[289 +: 32], a5 = fv[321 +: 32], a6 = fv[353 +: 32], a7 = fv[385 +: 32];
    wire        f_req   = !f_reply;
    wire        f_last  = {1'b0, f_foff} + {1'b0, f_plen} == {1'b0, f_total};
    wire [7:0]  p_off   = 8'd40 + {1'b0, f_nargs + {4'd0, f_nargs[0]}, 2'b00};
    wire [LB-1:0] p_lane = p_off[LB-1:0];
    wire [8:0]  p_beat  = {1'b0, p_off >> LB};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [17:0] p_end   = {1'b0, f_plen} + {{(18-LB){1'b0}}, p_lane} + (B[17:0] - 18'd1);
    /* verilator lint_on UNUSEDSIGNAL */
    wire [8:0]  p_beats = p_end[LB +: 9];

    assign lk_token = a0;
    wire piece = lk_hit && lk_peer == f_src;

    // ---- classification of the frame in hand -----------------------------------------
    wire [64:0] seg_end_req = {1'b0, f_off} + {48'd0, f_total};
    wire        put_range   = seg_end_req <= {1'b0, seg_size};
    wire [63:0] g_off  = {a2, a1};
    wire [63:0] g_dst  = {a5, a4};
    wire [64:0] g_end  = {1'b0, g_off} + {33'd0, a3};
    wire        g_shape = f_cat == 2'd1 && ((f_nargs == 5'd4 && a3 <= 32'd4096) ||
                                             (f_nargs == 5'd6 && a3 <= 32'd65536));
    wire [63:0] m_off   = {a3, a2};
    wire [7:0]  m_width = a1[15:8];
    wire [3:0]  m_op    = a1[3:0];
    wire        m_w64   = m_width == 8'd8;
    wire        m_shape = f_cat == 2'd1 && f_nargs == 5'd8 && a1[31:16] == 16'd0 && a1[7:4] == 4'd0
                          && a1[7:0] <= 8'd11 && (m_width == 8'd4 || m_width == 8'd8);
    wire        m_mis   = m_w64 ? m_off[2:0] != 3'd0 : m_off[1:0] != 2'd0;
    wire [64:0] m_end   = {1'b0, m_off} + (m_w64 ? 65'd8 : 65'd4);
    wire        u_long_ok = seg_end_req <= {1'b0, seg_size};

    reg [3:0] cls;
    always @* begin
        cls = C_DROP;
        if (f_req) begin
            if (f_h == `H_PUT || f_h == `H_GET || f_h == `H_AMO || f_h == `H_PING)
                cls = a0 == 32'd0 ? C_DROP       // no token (arguments past nargs are 0)
                    : f_h == `H_PUT ? C_PUT : f_h == `H_GET ? C_GET : f_h == `H_AMO ? C_AMO : C_PING;
            else if (kernel_req(compute, 1'b0, f_h)) cls = C_KERN;
            else if (!engine_owned(f_h)) cls = C_USER;
        end else begin
            if (f_h == `H_ACK)
                cls = (f_cat == 2'd1 && f_nargs == 5'd2) ? (a0 == 32'd0 ? C_DROP : C_ACK) : C_BADREP;
            else if (f_h == `H_GET_REPLY)
                cls = f_nargs == 5'd1 ? C_GREP : C_BADREP;
            else if (f_h == `H_AMO_REPLY)
                cls = (f_cat == 2'd1 && f_nargs == 5'd3) ? C_AREP : C_BADREP;
            else if (!engine_owned(f_h)) cls = C_USER;
        end
    end

    // Where the frame's payload goes, if anywhere (decided when it is taken).
    wire grep_ok = piece && lk_kind == 2'd1 && f_cat == 2'd3 && f_total == lk_len && f_off == lk_local;
    reg        w_en;
    reg [AW-1:0] w_addr;
    reg        bad_user;
    always @* begin
        w_en = 1'b0; w_addr = {AW{1'b0}}; bad_user = 1'b0;
        case (cls)
            C_PUT: begin
                w_en = f_cat == 2'd3 && f_nargs == 5'd1 && put_range;
                w_addr = seg_base[AW-1:0] + f_off[AW-1:0] + {{(AW-17){1'b0}}, f_foff};
            end
            C_GREP: begin
                w_en = grep_ok;
                w_addr = seg_base[AW-1:0] + lk_local[AW-1:0] + {{(AW-17){1'b0}}, f_foff};
            end
            C_USER: begin
                if (f_cat == 2'd2) begin
                    bad_user = f_foff != 17'd0 || f_plen != f_total;
                    w_en = !bad_user;
                    w_addr = rx_bounce[AW-1:0] + {{(AW-18){1'b0}}, rq_tail, 12'd0};
                end else if (f_cat == 2'd3) begin
                    bad_user = !u_long_ok;
                    w_en = u_long_ok;
                    w_addr = seg_base[AW-1:0] + f_off[AW-1:0] + {{(AW-17){1'b0}}, f_foff};
                end
            end
            C_KERN: bad_user = f_foff != 17'd0 || f_plen != f_total;
            default: ;
        endcase
    end

    // ---- memory: writes --------------------------------------------------------------
    // The write of a frame's payload goes to the write engine as the frame
    // is picked (wc_pick), or waits in wc_* while the engine is busy.
    reg           wc_valid;
    reg  [AW-1:0] wc_addr;
    reg  [16:0]   wc_len;
    reg  [LB-1:0] wc_lane;
    wire          wc_ready, w_idle;
    reg  [DW-1:0] amo_beat;
    reg           amo_wr;       // the write engine's input is the atomic's beat
    reg           writing;      // this frame's payload goes to memory
    reg  [8:0]    k;            // beat of the frame

    wire [DW-1:0] bt_sel  = bt_data[sel*DW +: DW];
    wire          bt_vsel = bt_valid[sel];
    wire          in_pl   = k >= p_beat && k < p_beat + p_beats;
    wire          w_in_ready;
    wire          wc_pick = st == S_PICK && pick_any && w_en && f_plen != 17'd0 && !wc_valid;
    wire          w_in_valid = amo_wr ? 1'b1 : (st == S_BEATS && writing && in_pl && bt_vsel);
    wire          beat_take  = st == S_BEATS && bt_vsel && (!(writing && in_pl) || w_in_ready);
    // A frame's first beat, when it holds no payload, is taken as the frame is.
    wire          pick_take  = st == S_PICK && pick_any && bt_valid[pick] && p_beat != 9'd0;
    genvar g;
    generate for (g = 0; g < 4; g = g + 1) begin : ready_g
        assign bt_ready[g] = (sel == g[1:0] && beat_take) || (pick == g[1:0] && pick_take);
    end endgenerate

    wire w_err, w_idle_now;
    fs_wr_stream #(.DW(DW), .AW(AW), .IDW(IDW), .ID(ID)) wr (
        .clk(clk), .rst(rst),
        .cmd_valid(wc_valid || wc_pick), .cmd_ready(wc_ready),
        .cmd_addr(wc_valid ? wc_addr : w_addr), .cmd_len(wc_valid ? wc_len : f_plen),
        .cmd_lane(wc_valid ? wc_lane : p_lane),
        .in_valid(w_in_valid), .in_ready(w_in_ready), .in_data(amo_wr ? amo_beat : bt_sel),
        .idle(w_idle), .idle_now(w_idle_now), .err(w_err),
        .m_awvalid(m_awvalid), .m_awready(m_awready), .m_awaddr(m_awaddr), .m_awlen(m_awlen),
        .m_awid(m_awid), .m_wvalid(m_wvalid), .m_wready(m_wready), .m_wdata(m_wdata),
        .m_wstrb(m_wstrb), .m_wlast(m_wlast), .m_bvalid(m_bvalid), .m_bready(m_bready),
        .m_bresp(m_bresp)
    );

    // ---- memory: the atomic's read ---------------------------------------------------
    reg  [AW-1:0] m_addr;   // byte address of the word
    reg  [63:0] old_word;
    assign m_arvalid = st == S_AR;
    assign m_araddr  = {m_addr[AW-1:LB], {LB{1'b0}}};
    assign m_arlen   = 8'd0;
    assign m_arid    = ID;
    assign m_rready  = st == S_R;
    reg r_err;
    wire unused_rresp0 = m_rresp[0];
    assign mem_err = w_err || r_err;

    wire [63:0] alu_new;
    wire        alu_fetch;
    fs_amo_alu alu (.op(m_op), .w64(m_w64), .old(old_word), .operand({a5, a4}),
                    .compare({a7, a6}), .new_value(alu_new), .fetches(alu_fetch));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [DW-1:0] r_shift = m_rdata >> ({{(32-LB){1'b0}}, m_addr[LB-1:0]} * 8);
    /* verilator lint_on UNUSEDSIGNAL */

    // ---- responses -------------------------------------------------------------------
    function [`JW-1:0] reply(input [7:0] wtype, input [7:0] h, input [15:0] dst,
                             input [4:0] nargs, input [95:0] args);
        begin
            reply = {`JW{1'b0}};
            reply[`J_WTYPE] = wtype;
            reply[`J_HANDLER] = h;
            reply[`J_DST] = dst;
            reply[`J_NARGS] = nargs;
            reply[448 +: 96] = args;
        end
    endfunction
    function [`JW-1:0] ack(input [15:0] dst, input [31:0] token, input [31:0] code);
        ack = reply(`T_SHORT_REP, `H_ACK, dst, 5'd2, {32'd0, code, token});
    endfunction

    // The response decided for the frame: a GET reply, an AMO reply, or an
    // ACK with a status code. Each is built apart and one choice picks it.
    wire amo_go = m_shape && !m_mis && m_end <= {1'b0, seg_size};
    wire get_go = g_shape && g_end <= {1'b0, seg_size};
    reg [31:0] ack_code;
    always @* begin
        case (cls)
            C_PUT:   ack_code = !(f_cat == 2'd3 && f_nargs == 5'd1) ? `RS_MALFORMED
                              : put_range ? `RS_OK : `RS_OUTOFRANGE;
            C_GET:   ack_code = !g_shape ? `RS_MALFORMED : `RS_OUTOFRANGE;   // a GET refused
            C_AMO:   ack_code = !m_shape ? `RS_MALFORMED : m_mis ? `RS_MISALIGNED
                              : m_end > {1'b0, seg_size} ? `RS_OUTOFRANGE : `RS_OK;
            C_PING:  ack_code = f_cat == 2'd1 && f_nargs == 5'd1 ? `RS_OK : `RS_MALFORMED;
            default: ack_code = `RS_OK;
        endcase
    end
    reg [`JW-1:0] get_job;
    always @* begin
        get_job = reply(f_nargs == 5'd6 ? `T_LONG_REP : `T_MEDIUM_REP, `H_GET_REPLY,
                        f_src, 5'd1, {64'd0, a0});
        get_job[`J_LEN]    = a3[16:0];
        get_job[`J_SRC]    = a3 == 32'd0 ? `SRC_NONE : `SRC_MEM;
        get_job[`J_MADDR]  = seg_base + g_off;
        get_job[`J_OFFSET] = f_nargs == 5'd6 ? g_dst : 64'd0;
    end
    wire [`JW-1:0] amo_job = reply(`T_SHORT_REP, `H_AMO_REPLY, f_src, 5'd3,
                                   {old_word[63:32] & {32{m_w64}}, old_word[31:0], a0});
    wire [`JW-1:0] job = cls == C_GET && get_go ? get_job
                       : cls == C_AMO && amo_go && alu_fetch ? amo_job
                       : ack(f_src, a0, ack_code);

    // Receive entry (section 9).
    wire [7:0] rx_kind = {3'b000, 1'b1, !f_req, 1'b0, f_cat - 2'd1};
    reg        rq_phase;
    reg [1023:0] ent;
    always @* begin
        ent = 1024'd0;
        ent[7:0]     = rx_kind;
        ent[8]       = rq_phase;
        ent[16 +: 16] = f_src;
        ent[32 +: 8] = f_h;
        ent[40 +: 8] = {3'd0, f_nargs};
        ent[64 +: 32] = {15'd0, f_total};
        ent[128 +: 64] = f_cat == 2'd2 ? rx_bounce + {46'd0, rq_tail, 12'd0}
                       : f_cat == 2'd3 ? f_off : 64'd0;
        ent[256 +: 512] = fv[`FI_ARGS];
    end
    assign rq_we    = st == S_RQ;
    assign rq_widx  = rq_tail;
    assign rq_wdata = ent;
    assign ev_rq    = rq_we;
    assign rq_stall = |want_rq;

    // A request for the kernel, once its frame is consumed and earlier
    // writes are committed.
    assign kam_valid   = st == S_KAM;
    assign kam_src     = f_src;
    assign kam_handler = f_h;
    assign kam_nargs   = f_nargs;
    assign kam_args    = fv[`FI_ARGS];

    // ---- the frame state machine ---------------------------------------------------------
    // Frames whose outcome must wait for their (and earlier) writes.
    reg need_drain;
    always @* begin
        case (cls)
            C_PUT, C_GREP, C_USER: need_drain = f_last;
            C_GET, C_AMO, C_PING, C_KERN: need_drain = 1'b1;
            default: need_drain = 1'b0;
        endcase
    end

    wire beats_done = beat_take && k == f_beats - 9'd1;
    // A frame that needs neither a settle nor its writes committed is done
    // with its last beat.
    wire quick = !need_drain;
    wire early = cls == C_ACK || cls == C_AREP || cls == C_BADREP;
    // The settle a response makes.
    reg        settle_v, settle_hv;
    reg [31:0] settle_code;
    reg [63:0] settle_val;
    always @* begin
        settle_hv = 1'b0; settle_val = 64'd0;
        case (cls)
            C_ACK: begin settle_v = piece; settle_code = a1; end
            C_AREP: begin
                settle_v = piece;
                settle_code = lk_kind == 2'd2 ? `RS_OK : `RS_MALFORMED;
                settle_hv = lk_kind == 2'd2;
                settle_val = {a2, a1};
            end
            C_GREP: begin settle_v = piece && f_last; settle_code = grep_ok ? `RS_OK : `RS_MALFORMED; end
            default: begin settle_v = piece && f_nargs != 5'd0; settle_code = `RS_MALFORMED; end
        endcase
    end
    // Settles: a response without a payload settles as it is taken (s_early),
    // others from the register.
    reg        sr_valid, sr_has_value;
    reg [31:0] sr_token, sr_code;
    reg [63:0] sr_value;
    wire s_early = st == S_PICK && pick_any && early && settle_v && !sr_valid;   // taken if s_ready
    assign s_valid     = sr_valid || s_early;
    assign s_token     = sr_valid ? sr_token : a0;
    assign s_code      = sr_valid ? sr_code : settle_code;
    assign s_value     = sr_valid ? sr_value : settle_val;
    assign s_has_value = sr_valid ? sr_has_value : settle_hv;

    // The response a frame makes, once its writes are committed.
    // (Committed in the cycle the last write response arrives.)
    wire drained = (w_idle || w_idle_now) && !wc_valid;
    // A PUT's ACK to another node is pushed held when the frame is taken.
    wire hold_pick = st == S_PICK && pick_any && cls == C_PUT && f_last && f_src != node_id;
    reg  held;
    assign rp_push = hold_pick
                  || (st == S_DRAIN && need_drain && drained && !held &&
                      (cls == C_PUT || cls == C_GET || cls == C_PING || (cls == C_AMO && !amo_go)))
                  || (st == S_AWAIT && drained);
    assign held_go = st == S_DRAIN && held && drained;
    always @* begin
        rp_job = job;
        rp_job[`J_HOLD] = hold_pick;
    end
    assign fi_ready = (st == S_FIN || (st == S_BEATS && beats_done && quick)) ? (4'd1 << sel) : 4'd0;
    assign idle = st == S_PICK && fi_valid == 4'd0 && w_idle && !sr_valid;

    always @(posedge clk) begin
        if (rst) begin
            st <= S_PICK; rr <= 2'd0; sel <= 2'd0; f <= {`FIW{1'b0}}; k <= 9'd0;
            writing <= 1'b0; wc_valid <= 1'b0; wc_addr <= {AW{1'b0}}; wc_len <= 17'd0;
            wc_lane <= {LB{1'b0}}; amo_wr <= 1'b0; amo_beat <= {DW{1'b0}};
            m_addr <= {AW{1'b0}}; old_word <= 64'd0; r_err <= 1'b0;
            sr_valid <= 1'b0; sr_token <= 32'd0; sr_code <= 32'd0; sr_value <= 64'd0; sr_has_value <= 1'b0;
            held <= 1'b0;
            rq_tail <= 6'd0; rq_phase <= 1'b1;
            ev_bad_packet <= 1'b0; ev_bad_port <= 1'b0;
            reads_owed <= 4'd0;
        end else begin
            reads_owed <= reads_owed
                + ((rp_push && rp_job[`J_HANDLER] == `H_GET_REPLY && rp_job[`J_SRC] == `SRC_MEM) ? 4'd1 : 4'd0)
                - (reply_read ? 4'd1 : 4'd0);
            ev_bad_packet <= 1'b0;
            r_err <= 1'b0;
            if (wc_valid && wc_ready) wc_valid <= 1'b0;
            if (sr_valid && s_ready) sr_valid <= 1'b0;
            if (hold_pick) held <= 1'b1;
            if (held_go) held <= 1'b0;
            case (st)
                S_PICK: if (pick_any) begin
                    sel <= pick;
                    rr  <= pick + 2'd1;
                    f   <= fv;
                    k   <= {8'd0, pick_take};
                    st  <= S_BEATS;
                    // Responses to this node's requests without a payload
                    // to land settle at once.
                    // (At once, s_early, when the settle register is free and taken.)
                    if (early && settle_v && (sr_valid || !s_ready)) begin
                        sr_valid <= 1'b1; sr_token <= a0; sr_code <= settle_code;
                        sr_has_value <= settle_hv; sr_value <= settle_val;
                    end
                    // Where the payload goes (decided on the picked frame).
                    writing <= w_en && f_plen != 17'd0;
                    if (wc_pick && !wc_ready) begin
                        wc_valid <= 1'b1;
                        wc_addr  <= w_addr;
                        wc_len   <= f_plen;
                        wc_lane  <= p_lane;
                    end
                end
                S_BEATS: begin
                    if (beat_take) k <= k + 9'd1;
                    if (beats_done) begin
                        if (bad_user) begin
                            ev_bad_packet <= 1'b1;
                            ev_bad_port <= sel[0] && sel[1] == 1'b0;
                        end
                        st <= quick ? S_PICK : S_DRAIN;
                    end
                end
                S_DRAIN: begin
                    // What reports a frame's writes (a response, a settle, a
                    // receive entry) waits until they are committed, and so
                    // does a read (GET, atomic); other frames go on at once.
                    if (!need_drain) st <= S_FIN;
                    else if (drained) begin
                        case (cls)
                            C_PUT, C_GET, C_PING: st <= S_FIN;
                            C_AMO: begin
                                if (amo_go) begin
                                    m_addr <= seg_base[AW-1:0] + m_off[AW-1:0];
                                    st <= S_AR;
                                end else begin
                                    st <= S_FIN;
                                end
                            end
                            C_GREP: st <= S_SETTLE;
                            C_USER: st <= bad_user ? S_FIN : S_RQ;
                            C_KERN: st <= bad_user ? S_FIN : S_KAM;
                            default: st <= S_FIN;
                        endcase
                    end
                end
                S_AR: if (m_arready) st <= S_R;
                S_R: if (m_rvalid) begin
                    r_err <= m_rresp[1];
                    old_word <= m_w64 ? r_shift[63:0] : {32'd0, r_shift[31:0]};
                    st <= S_AW;
                end
                S_AW: begin
                    // Write the new value back ...
                    wc_valid <= 1'b1;
                    wc_addr  <= m_addr;
                    wc_len   <= m_w64 ? 17'd8 : 17'd4;
                    wc_lane  <= m_addr[LB-1:0];
                    amo_wr   <= 1'b1;
                    amo_beat <= {{(DW-64){1'b0}}, alu_new} << ({{(32-LB){1'b0}}, m_addr[LB-1:0]} * 8);
                    st <= S_AFEED;
                end
                S_AFEED: if (w_in_ready) begin
                    amo_wr <= 1'b0;
                    st <= S_AWAIT;
                end
                S_AWAIT: if (drained) begin
                    // ... and answer once it is committed.
                    st <= S_FIN;
                end
                S_SETTLE: begin
                    // A GET reply's last fragment, its bytes committed.
                    if (!sr_valid || s_ready) begin
                        sr_valid <= settle_v; sr_token <= a0; sr_code <= settle_code;
                        sr_has_value <= 1'b0; sr_value <= 64'd0;
                        st <= S_FIN;
                    end
                end
                S_KAM: if (kam_ready) st <= S_FIN;
                S_RQ: begin
                    rq_tail <= rq_tail + 6'd1;
                    if (rq_tail == 6'd63) rq_phase <= ~rq_phase;
                    st <= S_FIN;
                end
                default: begin   // S_FIN: the frame record leaves
                    st <= S_PICK;
                end
            endcase
        end
    end

    // An AM with a bad payload placement is reported on the port it came in on.
    wire [15:0] unused_node = node_id;
    wire [63:0] unused_g    = {g_end[64], 63'd0} ^ m_end[63:0] ^ seg_end_req[63:0];
endmodule

`default_nettype wire
