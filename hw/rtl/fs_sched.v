// Scheduler: takes fetched descriptors in queue order, decodes them
// (fs_desc_decode), applies the board-side checks (target, local range,
// fences), and issues them as packet jobs to the AM sequencer:
//
//   Put    -> Long PUT requests [token] of at most 64 KiB each
//   Get    -> Short GET requests [token, off, len, dst] answered by Long
//             GET_REPLYs that land in the local segment
//   Atomic -> one Short AMO request [token, op|width<<8, off, operand, compare]
//   AM     -> the user's packet; it completes when its payload has been read
//
// exactly as the reference engine does (gasnet-core/src/engine). Each
// system request holds a piece slot (indexed by its token's low bits) until
// its response settles it; a command holds a command slot until its pieces
// are settled, then the finisher writes its completion record. Fence and
// FENCE_BEFORE wait until no command slot is in use. Disabling the core
// aborts every command in a slot; pieces to a peer the link declared dead
// settle with status Timeout.
//
// Descriptors come from the host's command queue or from the kernel port
// (d_src); both share the slots, the checks and the fences, and each
// completion record leaves marked with its source (c_src).
`default_nettype none
`include "fs_defs.vh"

module fs_sched #(
    parameter integer CMDS      = 32,   // command slots (power of two)
    parameter integer PIECES    = 16,   // system requests in flight (power of two)
    parameter integer MAX_NODES = 16
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 enabled,
    input  wire [16:0]          node_count,
    input  wire [63:0]          seg_base,
    input  wire [63:0]          seg_size,
    input  wire [MAX_NODES-1:0] dead,
    // Fetched descriptors.
    input  wire                 d_valid,
    output wire                 d_ready,
    input  wire [511:0]         d_head,
    input  wire [511:0]         d_cont,
    input  wire [7:0]           d_index,
    input  wire                 d_src,      // 0: the host's queue, 1: the kernel port
    // Packet jobs to the AM sequencer.
    output wire                 j_valid,
    input  wire                 j_ready,
    output wire [`JW-1:0]       j_data,
    // AM payload read (local completion) from the AM sequencer.
    input  wire                 n_valid,
    output wire                 n_ready,
    input  wire [6:0]           n_note,
    // Piece lookup for the dispatcher (combinational).
    input  wire [31:0]          lk_token,
    output wire                 lk_hit,
    output wire [15:0]          lk_peer,
    output wire [1:0]           lk_kind,    // 0 put, 1 get, 2 atomic
    output wire [63:0]          lk_local,
    output wire [16:0]          lk_len,
    // Responses from the dispatcher.
    input  wire                 s_valid,
    output wire                 s_ready,
    input  wire [31:0]          s_token,
    input  wire [31:0]          s_code,     // the responder's status code
    input  wire [63:0]          s_value,
    input  wire                 s_has_value,
    // Completion records to the completion writer.
    output wire                 c_valid,
    input  wire                 c_ready,
    output wire [`CW-1:0]       c_data,
    output wire                 c_src,      // the record's command came from the kernel port
    output wire                 cnt_cmd,
    output wire                 cnt_err,
    output wire                 idle
);
    localparam integer CB = $clog2(CMDS);
    localparam integer PB = $clog2(PIECES);
    localparam integer NB = $clog2(MAX_NODES);
    localparam [1:0] K_PUT = 2'd0, K_GET = 2'd1, K_AMO = 2'd2;

    // ---- decode ----------------------------------------------------------------
    wire         dec_chained, dec_bad;
    wire [7:0]   dec_status, dec_op, dec_flags, dec_handler;
    wire [31:0]  dec_detail, dec_tag, dec_len;
    wire [15:0]  dec_target;
    wire [63:0]  dec_local, dec_remote, dec_operand, dec_compare;
    wire [255:0] dec_inline;
    wire [4:0]   dec_nargs;
    wire [511:0] dec_args;
    wire [3:0]   dec_amo_op, dec_amo_width;

    fs_desc_decode dec (
        .head(d_head), .cont(d_cont), .chained(dec_chained), .bad(dec_bad),
        .status(dec_status), .detail(dec_detail), .opcode(dec_op), .flags(dec_flags),
        .target(dec_target), .tag(dec_tag), .len(dec_len), .local_addr(dec_local),
        .remote(dec_remote), .inline_data(dec_inline), .handler(dec_handler),
        .nargs(dec_nargs), .args(dec_args), .amo_op(dec_amo_op), .amo_width(dec_amo_width),
        .operand(dec_operand), .compare(dec_compare)
    );
    wire       unused_chained  = dec_chained;
    wire [3:0] unused_flags_hi = dec_flags[7:4];   // the decoder rejects them

    // ---- command slots -----------------------------------------------------------
    reg             cv      [0:CMDS-1];
    reg             c_iss   [0:CMDS-1];
    reg             c_gen   [0:CMDS-1];
    reg             c_cmpl  [0:CMDS-1];
    reg  [5:0]      c_pend  [0:CMDS-1];
    reg  [31:0]     c_tag   [0:CMDS-1];
    reg  [7:0]      c_op    [0:CMDS-1];
    reg  [15:0]     c_tgt   [0:CMDS-1];
    reg  [7:0]      c_idx   [0:CMDS-1];
    reg             c_from  [0:CMDS-1];
    reg  [31:0]     c_bytes [0:CMDS-1];
    reg  [7:0]      c_st    [0:CMDS-1];
    reg  [31:0]     c_det   [0:CMDS-1];
    reg  [63:0]     c_val   [0:CMDS-1];

    // ---- piece slots ---------------------------------------------------------------
    reg             pv      [0:PIECES-1];
    reg  [31:0]     p_tok   [0:PIECES-1];
    reg  [CB-1:0]   p_cmd   [0:PIECES-1];
    reg  [15:0]     p_peer  [0:PIECES-1];
    reg  [1:0]      p_kind  [0:PIECES-1];
    reg  [63:0]     p_local [0:PIECES-1];
    reg  [16:0]     p_len   [0:PIECES-1];

    wire [PB-1:0] lk_i = lk_token[PB-1:0];
    assign lk_hit   = pv[lk_i] && p_tok[lk_i] == lk_token;
    assign lk_peer  = p_peer[lk_i];
    assign lk_kind  = p_kind[lk_i];
    assign lk_local = p_local[lk_i];
    assign lk_len   = p_len[lk_i];

    // Free command slot and busy count.
    integer i;
    reg [CB-1:0] free_slot;
    reg          have_free, any_active;
    reg [CB-1:0] fin_slot;
    reg          fin_any;
    always @* begin
        have_free = 1'b0; free_slot = {CB{1'b0}};
        fin_any = 1'b0;   fin_slot = {CB{1'b0}};
        any_active = 1'b0;
        for (i = CMDS - 1; i >= 0; i = i - 1) begin
            if (!cv[i]) begin have_free = 1'b1; free_slot = i[CB-1:0]; end
            if (cv[i] && ((c_iss[i] && c_pend[i] == 6'd0) || !enabled)) begin
                fin_any = 1'b1; fin_slot = i[CB-1:0];
            end
            if (cv[i]) any_active = 1'b1;
        end
    end

    // ---- issue ---------------------------------------------------------------------
    localparam [1:0] I_IDLE = 2'd0, I_PIECES = 2'd1;
    reg  [1:0]    ist;
    reg  [CB-1:0] i_slot;
    reg  [30:0]   i_cur;        // bytes issued so far
    reg  [31:0]   next_token;

    wire is_put  = dec_op == `OP_PUT;
    wire is_get  = dec_op == `OP_GET;
    wire is_amo  = dec_op == `OP_AMO;
    wire is_nf   = dec_op == `OP_NOP || dec_op == `OP_FENCE;
    wire is_am   = !is_put && !is_get && !is_amo && !is_nf;
    wire inl     = dec_flags[3];
    wire iova    = dec_flags[2];
    wire am_short = dec_op[1:0] == 2'd0;
    wire needs_local = (is_put && !inl) || is_get || (is_am && !am_short);
    wire fence   = dec_op == `OP_FENCE || dec_flags[1];
    wire [64:0] local_end  = {1'b0, dec_local} + {33'd0, dec_len};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [64:0] remote_end = {1'b0, dec_remote} + {33'd0, dec_len};   // only the carry matters
    /* verilator lint_on UNUSEDSIGNAL */
    wire        target_bad = {1'b0, dec_target} >= node_count;
    wire        local_bad  = needs_local && local_end > {1'b0, seg_size};
    wire        remote_bad = (is_put || is_get) && remote_end[64];
    wire        dead_tgt   = dead[dec_target[NB-1:0]];

    // Immediate outcome of the descriptor at the head (valid in I_IDLE).
    reg        imm;         // completes now, with imm_st/imm_det
    reg [7:0]  imm_st;
    reg [31:0] imm_det;
    always @* begin
        imm = 1'b1; imm_st = `ST_OK; imm_det = 32'd0;
        if (!enabled) begin
            imm_st = `ST_ABORTED;
        end else if (dec_bad) begin
            imm_st = dec_status; imm_det = dec_detail;
        end else if (target_bad) begin
            imm_st = `ST_BADTARGET; imm_det = {16'd0, dec_target};
        end else if (needs_local && iova) begin
            imm_st = `ST_UNSUPPORTED; imm_det = {24'd0, `F_IOVA};
        end else if (local_bad) begin
            imm_st = `ST_OUTOFRANGE; imm_det = dec_local[31:0];
        end else if (remote_bad) begin
            imm_st = `ST_OUTOFRANGE; imm_det = 32'd0;
        end else if (is_nf || ((is_put || is_get) && dec_len == 32'd0)) begin
            imm_st = `ST_OK;
        end else begin
            imm = 1'b0;
        end
    end

    wire fence_wait = enabled && !dec_bad && fence && any_active;
    wire fin_fire;                                   // finisher uses the completion port
    wire imm_fire   = ist == I_IDLE && d_valid && !fence_wait && imm && !fin_fire
                      && (c_ready || (imm_st == `ST_OK && !dec_flags[0]));
    // A command of one piece (an atomic, a put or get of at most 64 KiB) is
    // allocated and issued in one cycle when its token's piece slot is free.
    wire single     = is_amo || ((is_put || is_get) && dec_len <= 32'd65536);
    wire fast       = single && !pv[next_token[PB-1:0]] && !dead_tgt;
    wire alloc_fire = ist == I_IDLE && d_valid && !fence_wait && !imm && have_free
                      && (!(is_am || fast) || j_ready);
    wire fast_fire  = alloc_fire && fast;
    assign d_ready  = imm_fire || (alloc_fire && (is_am || fast)) || i_done;

    // Pieces of the command in I_PIECES (or issued at once).
    wire          in_pieces = ist == I_PIECES;
    wire [30:0]   cur     = in_pieces ? i_cur : 31'd0;
    wire [CB-1:0] p_slot  = in_pieces ? i_slot : free_slot;
    wire [30:0]   i_left  = dec_len[30:0] - cur;
    wire [16:0]   i_n     = i_left > 31'd65536 ? 17'd65536 : i_left[16:0];
    wire [PB-1:0] t_i     = next_token[PB-1:0];
    wire          t_free  = !pv[t_i];
    wire          i_dead  = dead_tgt;
    wire          i_send  = (in_pieces && enabled && t_free && !i_dead && j_ready) || fast_fire;
    wire          i_tmo;                                // settles a piece to a dead peer
    wire          i_step  = i_send || i_tmo;
    wire          i_last  = is_amo || i_left == {14'd0, i_n};
    wire          i_done  = (ist == I_PIECES && (i_step && i_last)) || (ist == I_PIECES && !enabled);
    wire [31:0]   tok_after = next_token + 32'd1 == 32'd0 ? 32'd1 : next_token + 32'd1;

    // ---- the job being pushed ------------------------------------------------------
    reg [`JW-1:0] job;
    wire [63:0] piece_off   = dec_remote + {33'd0, cur};
    wire [63:0] piece_local = dec_local + {33'd0, cur};
    always @* begin
        job = {`JW{1'b0}};
        job[`J_DST] = dec_target;
        job[`J_REQ] = 1'b1;
        if ((in_pieces || fast) && is_put) begin
            job[`J_WTYPE]   = `T_LONG_REQ;
            job[`J_HANDLER] = `H_PUT;
            job[`J_NARGS]   = 5'd1;
            job[`J_LEN]     = i_n;
            job[`J_OFFSET]  = piece_off;
            job[`J_SRC]     = inl ? `SRC_INLINE : `SRC_MEM;
            job[`J_MADDR]   = seg_base + piece_local;
            job[`J_INLINE]  = dec_inline;
            job[448 +: 32]  = next_token;
        end else if ((in_pieces || fast) && is_get) begin
            job[`J_WTYPE]   = `T_SHORT_REQ;
            job[`J_HANDLER] = `H_GET;
            job[`J_NARGS]   = 5'd6;
            job[448 +: 192] = {piece_local, 15'd0, i_n, piece_off, next_token};
        end else if (in_pieces || (fast && is_amo)) begin
            job[`J_WTYPE]   = `T_SHORT_REQ;
            job[`J_HANDLER] = `H_AMO;
            job[`J_NARGS]   = 5'd8;
            job[448 +: 256] = {dec_compare, dec_operand, dec_remote, 16'd0, 4'd0, dec_amo_width,
                               4'd0, dec_amo_op, next_token};
        end else begin
            // A user AM (or a system handler named by the host): sent as is.
            job[`J_WTYPE]   = {3'd0, dec_op[3], 2'd0, dec_op[1:0] + 2'd1};
            job[`J_HANDLER] = dec_handler;
            job[`J_NARGS]   = dec_nargs;
            job[`J_LEN]     = dec_len[16:0];
            job[`J_OFFSET]  = dec_op[1:0] == 2'd2 ? dec_remote : 64'd0;
            job[`J_SRC]     = (am_short || dec_len == 32'd0) ? `SRC_NONE : `SRC_MEM;
            job[`J_MADDR]   = seg_base + dec_local;
            job[`J_NOTE]    = {1'b1, ~c_gen[free_slot], {(5-CB){1'b0}}, free_slot};
            job[`J_ARGS]    = dec_args;
        end
    end
    assign j_valid = i_send || (alloc_fire && is_am);
    wire unused_fast = fast_fire;
    assign j_data  = job;

    // ---- settles ---------------------------------------------------------------------
    // One per cycle, in priority: dispatcher responses, AM local completions,
    // pieces refused at issue because their peer is dead, dead-peer sweep.
    reg  [PB-1:0] sw_i;
    wire          sw_hit = enabled && pv[sw_i] && dead[p_peer[sw_i][NB-1:0]];
    wire [PB-1:0] s_i    = s_token[PB-1:0];
    wire          s_hit  = pv[s_i] && p_tok[s_i] == s_token;
    wire [CB-1:0] n_slot = n_note[CB-1:0];
    wire          n_hit  = n_note[6] && cv[n_slot] && c_gen[n_slot] == n_note[5];
    wire          t_want = ist == I_PIECES && enabled && i_dead;

    assign s_ready = 1'b1;
    assign n_ready = !s_valid;
    assign i_tmo   = t_want && !s_valid && !n_valid;
    wire   sw_fire = sw_hit && !s_valid && !n_valid && !t_want;

    reg           st_fire, st_piece, st_value;
    reg  [CB-1:0] st_slot;
    reg  [PB-1:0] st_pi;
    reg  [7:0]    st_status;
    reg  [31:0]   st_detail;
    reg  [63:0]   st_val;
    always @* begin
        st_fire = 1'b0; st_piece = 1'b0; st_value = 1'b0;
        st_slot = {CB{1'b0}}; st_pi = {PB{1'b0}};
        st_status = `ST_OK; st_detail = 32'd0; st_val = 64'd0;
        if (s_valid) begin
            st_fire = s_hit; st_piece = 1'b1; st_pi = s_i; st_slot = p_cmd[s_i];
            st_value = s_has_value; st_val = s_value;
            case (s_code)
                32'd0: ;
                32'd1: begin st_status = `ST_REMOTE; st_detail = {24'd0, `ST_OUTOFRANGE}; end
                32'd2: begin st_status = `ST_REMOTE; st_detail = {24'd0, `ST_MISALIGNED}; end
                32'd3: begin st_status = `ST_REMOTE; st_detail = {24'd0, `ST_BADHANDLER}; end
                default: begin st_status = `ST_REMOTE; st_detail = {24'd0, `ST_UNSUPPORTED}; end
            endcase
        end else if (n_valid) begin
            st_fire = n_hit; st_slot = n_slot;
        end else if (t_want) begin
            // Counted as issued-and-settled: no piece, no pending count.
            st_fire = 1'b1; st_slot = i_slot; st_status = `ST_TIMEOUT;
            st_detail = {16'd0, dec_target};
        end else if (sw_hit) begin
            st_fire = 1'b1; st_piece = 1'b1; st_pi = sw_i; st_slot = p_cmd[sw_i];
            st_status = `ST_TIMEOUT; st_detail = {16'd0, p_peer[sw_i]};
        end
    end
    wire unused_sw = sw_fire;

    // ---- finisher: writes the completion of a command whose pieces are all settled
    wire [7:0] fin_st  = (c_iss[fin_slot] && c_pend[fin_slot] == 6'd0) ? c_st[fin_slot] : `ST_ABORTED;
    wire       fin_ok  = fin_st == `ST_OK;
    wire       fin_cq  = !fin_ok || c_cmpl[fin_slot];
    assign fin_fire = fin_any && (c_ready || !fin_cq);

    reg [`CW-1:0] rec;
    always @* begin
        rec = {`CW{1'b0}};
        if (fin_any) begin
            rec[`C_TAG]    = c_tag[fin_slot];
            rec[`C_STATUS] = fin_st;
            rec[`C_OPCODE] = c_op[fin_slot];
            rec[`C_TARGET] = c_tgt[fin_slot];
            rec[`C_VALUE]  = fin_ok ? c_val[fin_slot] : 64'd0;
            rec[`C_BYTES]  = fin_ok ? c_bytes[fin_slot] : 32'd0;
            rec[`C_DETAIL] = fin_ok ? 32'd0 : (fin_st == `ST_ABORTED ? 32'd0 : c_det[fin_slot]);
            rec[`C_INDEX]  = {8'd0, c_idx[fin_slot]};
        end else begin
            rec[`C_TAG]    = dec_tag;
            rec[`C_STATUS] = imm_st;
            rec[`C_OPCODE] = dec_op;
            rec[`C_TARGET] = dec_target;
            rec[`C_BYTES]  = 32'd0;
            rec[`C_DETAIL] = imm_det;
            rec[`C_INDEX]  = {8'd0, d_index};
        end
    end
    assign c_valid = (fin_any && fin_cq) || (!fin_any && imm_fire && (imm_st != `ST_OK || dec_flags[0]));
    assign c_data  = rec;
    assign c_src   = fin_any ? c_from[fin_slot] : d_src;
    assign cnt_cmd = fin_fire || imm_fire;
    assign cnt_err = (fin_fire && !fin_ok) || (imm_fire && imm_st != `ST_OK);
    assign idle    = !any_active && !d_valid && ist == I_IDLE;

    // ---- state -------------------------------------------------------------------------
    always @(posedge clk) begin
        if (rst) begin
            ist <= I_IDLE;
            i_slot <= {CB{1'b0}};
            i_cur <= 31'd0;
            next_token <= 32'd1;
            sw_i <= {PB{1'b0}};
            for (i = 0; i < CMDS; i = i + 1) begin
                cv[i] <= 1'b0; c_iss[i] <= 1'b0; c_gen[i] <= 1'b0; c_cmpl[i] <= 1'b0;
                c_pend[i] <= 6'd0; c_tag[i] <= 32'd0; c_op[i] <= 8'd0; c_tgt[i] <= 16'd0;
                c_idx[i] <= 8'd0; c_from[i] <= 1'b0; c_bytes[i] <= 32'd0; c_st[i] <= 8'd0; c_det[i] <= 32'd0;
                c_val[i] <= 64'd0;
            end
            for (i = 0; i < PIECES; i = i + 1) begin
                pv[i] <= 1'b0; p_tok[i] <= 32'd0; p_cmd[i] <= {CB{1'b0}}; p_peer[i] <= 16'd0;
                p_kind[i] <= 2'd0; p_local[i] <= 64'd0; p_len[i] <= 17'd0;
            end
        end else begin
            sw_i <= sw_i + {{(PB-1){1'b0}}, 1'b1};
            // Allocation of a command slot.
            if (alloc_fire) begin
                cv[free_slot]      <= 1'b1;
                c_gen[free_slot]   <= ~c_gen[free_slot];
                c_iss[free_slot]   <= is_am || fast;
                c_pend[free_slot]  <= (is_am || fast) ? 6'd1 : 6'd0;
                c_cmpl[free_slot]  <= dec_flags[0];
                c_tag[free_slot]   <= dec_tag;
                c_op[free_slot]    <= dec_op;
                c_tgt[free_slot]   <= dec_target;
                c_idx[free_slot]   <= d_index;
                c_from[free_slot]  <= d_src;
                c_bytes[free_slot] <= is_amo ? 32'd0 : dec_len;
                c_st[free_slot]    <= `ST_OK;
                c_det[free_slot]   <= 32'd0;
                c_val[free_slot]   <= 64'd0;
                if (!is_am && !fast) begin
                    ist    <= I_PIECES;
                    i_slot <= free_slot;
                    i_cur  <= 31'd0;
                end
            end
            // Issuing pieces.
            if (i_send) begin
                pv[t_i]      <= 1'b1;
                p_tok[t_i]   <= next_token;
                p_cmd[t_i]   <= p_slot;
                p_peer[t_i]  <= dec_target;
                p_kind[t_i]  <= is_put ? K_PUT : is_get ? K_GET : K_AMO;
                p_local[t_i] <= piece_local;
                p_len[t_i]   <= i_n;
                next_token   <= tok_after;
            end
            if (i_step && in_pieces) i_cur <= i_cur + {14'd0, i_n};
            if (i_done) begin
                ist <= I_IDLE;
                c_iss[i_slot] <= 1'b1;
            end
            // Settles (a piece's pending count rises in the same cycle as it
            // is issued only for other slots: settles name issued pieces).
            for (i = 0; i < CMDS; i = i + 1) begin
                if (cv[i] && !(alloc_fire && free_slot == i[CB-1:0])) begin
                    c_pend[i] <= c_pend[i]
                        + ((i_send && in_pieces && i_slot == i[CB-1:0]) ? 6'd1 : 6'd0)
                        - ((st_fire && st_slot == i[CB-1:0] && !(t_want && !s_valid && !n_valid)) ? 6'd1 : 6'd0);
                    if (st_fire && st_slot == i[CB-1:0]) begin
                        if (c_st[i] == `ST_OK && st_status != `ST_OK) begin
                            c_st[i]  <= st_status;
                            c_det[i] <= st_detail;
                        end
                        if (st_value) c_val[i] <= st_val;
                    end
                end
            end
            if (st_fire && st_piece) pv[st_pi] <= 1'b0;
            // Finishing.
            if (fin_fire) cv[fin_slot] <= 1'b0;
            if (!enabled)
                for (i = 0; i < PIECES; i = i + 1) pv[i] <= 1'b0;
        end
    end
endmodule

`default_nettype wire
