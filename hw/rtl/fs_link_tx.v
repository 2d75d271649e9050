// Link transmitter: the transmit (retransmit) buffer and the sender.
//
// Frames bound for other nodes are written into the buffer by the AM
// sequencer and take the next sequence number of their peer when their first
// beat is in; each stays until its peer acknowledges it. A frame whose beats
// the sequencer writes one a cycle (no payload from memory: fo_ct) is sent
// cut-through, its first beat on the port in the cycle after it is written
// (the buffer's read forwards a beat written in the same cycle); any other
// frame is sent once its last beat is in, so no frame pauses on the port.
// A held frame (fo_hold: an acknowledgement whose memory writes are still
// being committed) is not sent before its release pulse (held_go); releases come in
// the order of the held frames. The sender sends,
// one frame at a time and in this order of preference: a NACK it owes, an
// ACK that is due, a retransmission (on a timeout every unacknowledged frame
// of the peer, on a NACK the frames it names), the next new frame, any ACK
// owed. On the way out it stamps a data frame's flags (SEQ, ACK, and
// ACK_NOW when nothing follows it), seq and ack into its first beat,
// computes the CRC-32C and appends it. A frame for peer p leaves on port
// p mod 2.
`default_nettype none
`include "fs_defs.vh"

module fs_link_tx #(
    parameter integer DW        = 256,
    parameter integer TXB       = 2048,   // buffer beats (power of two)
    parameter integer TXQ       = 64,     // buffered frames (power of two)
    parameter integer FRAG      = 4096,
    parameter integer MAX_NODES = 16,
    parameter integer NB        = $clog2(MAX_NODES),
    parameter integer LB        = $clog2(DW / 8)
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire [15:0]          node_id,
    // Frames from the AM sequencer.
    input  wire                 fo_valid,
    input  wire [DW-1:0]        fo_data,
    input  wire                 fo_last,
    input  wire                 fo_loop,
    input  wire [15:0]          fo_dst,
    input  wire [17:0]          fo_len,
    input  wire [8:0]           fo_beats,
    input  wire [16:0]          fo_plen,
    input  wire                 fo_ct,      // the frame's beats come one a cycle
    input  wire                 fo_hold,    // the frame waits for a release
    output wire                 space,
    input  wire                 held_go,    // the oldest held frame may go
    // Link control.
    output wire                 tc_valid,
    output wire [NB-1:0]        tc_peer,
    input  wire [31:0]          tc_seq,
    input  wire [MAX_NODES-1:0] dead,
    output wire [NB-1:0]        q_peer,
    input  wire [31:0]          q_ack,
    output wire [NB-1:0]        f_peer,
    input  wire [31:0]          f_una,
    output wire                 as_valid,
    output wire [NB-1:0]        as_peer,
    input  wire                 ack_urgent,
    input  wire                 ack_any,
    input  wire [15:0]          ack_peer,
    input  wire                 nack_req,
    input  wire [15:0]          nack_peer,
    input  wire [31:0]          nack_ack,
    input  wire [5:0]           nack_words,
    input  wire [1023:0]        nack_bitmap,
    output wire                 nack_sent,
    input  wire                 rt_valid,
    input  wire [15:0]          rt_peer,
    input  wire                 rt_all,
    input  wire [31:0]          rt_base,
    input  wire [1023:0]        rt_bitmap,
    output wire                 rt_take,
    // Ports.
    output wire                 tx0_valid,
    input  wire                 tx0_ready,
    output wire [DW-1:0]        tx0_data,
    output wire [DW/8-1:0]      tx0_keep,
    output wire                 tx0_last,
    output wire                 tx1_valid,
    input  wire                 tx1_ready,
    output wire [DW-1:0]        tx1_data,
    output wire [DW/8-1:0]      tx1_keep,
    output wire                 tx1_last,
    // Counters.
    output wire                 cnt_ptx,
    output wire [16:0]          cnt_btx,
    output wire                 cnt_rtx,
    output wire                 busy,
    output wire                 armed
);
    localparam integer B    = DW / 8;
    localparam integer BW   = $clog2(TXB);
    localparam integer QW   = $clog2(TXQ);
    localparam integer MAXF_I = (FRAG + 104 + B - 1) / B;
    localparam [BW:0]  MAXF = MAXF_I[BW:0];

    function [31:0] be(input [31:0] v);
        be = {v[7:0], v[15:8], v[23:16], v[31:24]};
    endfunction

    // ---- the buffer ------------------------------------------------------------------
    reg  [BW:0] b_wp, b_hp;
    reg  [QW:0] q_head, q_send, q_tail;
    reg  [NB-1:0] d_peer  [0:TXQ-1];
    reg  [31:0]   d_seq   [0:TXQ-1];
    reg  [BW-1:0] d_start [0:TXQ-1];
    reg  [8:0]    d_beats [0:TXQ-1];
    reg  [17:0]   d_len   [0:TXQ-1];
    reg           d_hold  [0:TXQ-1];

    wire [NB-1:0] fo_peer = fo_dst[NB-1:0];
    wire [15:0]   unused_fo_dst = fo_dst;
    wire wr     = fo_valid && !fo_loop;
    // The frame being written: its entry is made with its first beat (or,
    // its peer dead, it is dropped whole).
    reg  w_mid, w_drop, w_ct;
    wire w_first = wr && !w_mid;
    wire commit  = w_first && !dead[fo_peer];
    wire store   = wr && (w_first ? !dead[fo_peer] : !w_drop);
    wire [QW-1:0] q_last = q_tail[QW-1:0] - 1'b1;
    // Releases received minus held frames sent or discarded (two's complement).
    reg  [3:0] rel_cnt;
    wire       rel_ok = (!rel_cnt[3] && rel_cnt != 4'd0) || held_go;
    assign space    = (TXB[BW:0] - (b_wp - b_hp)) >= MAXF && (q_tail - q_head) != TXQ[QW:0];
    assign tc_valid = commit;
    assign tc_peer  = fo_peer;
    assign cnt_ptx  = commit;
    assign cnt_btx  = commit ? fo_plen : 17'd0;

    // Oldest frame: freed once acknowledged (or its peer is dead).
    wire [QW-1:0] hq    = q_head[QW-1:0];
    assign f_peer = d_peer[hq];
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0]   h_age = f_una - d_seq[hq] - 32'd1;   // below 2^31: seq is before una
    /* verilator lint_on UNUSEDSIGNAL */
    wire          h_sent = q_head != q_send;
    wire          free_h = q_head != q_tail && ((h_sent && !h_age[31]) || dead[d_peer[hq]]);

    // ---- the sender --------------------------------------------------------------------
    // X_ARMED: a held frame's first beat is read and waits for its release,
    // to leave in the release's own cycle; a control frame or retransmission
    // wanted meanwhile disarms (the frame is armed again after it).
    localparam [1:0] X_IDLE = 2'd0, X_SCAN = 2'd1, X_SEND = 2'd2, X_ARMED = 2'd3;
    reg  [1:0]    xs;
    reg  [QW:0]   r;            // retransmission scan position
    reg  [NB-1:0] r_peer;
    reg           r_all;
    reg  [31:0]   r_base;
    reg  [1023:0] r_bitmap;

    // Frame in flight.
    reg           e_ram;        // from the buffer (else the control vector)
    reg           e_first;      // a first transmission (ACK_NOW may be set)
    reg           e_rtx;
    reg  [NB-1:0] e_peer;
    reg  [31:0]   e_seq;
    reg  [8:0]    e_k, e_n;     // beat index, data beats
    reg  [LB-1:0] e_tail;       // bytes in the last data beat (0: a full beat)
    reg  [31:0]   crc;
    reg           e_trail;      // the extra trailer beat is next
    reg  [1535:0] vec;          // control frame bytes

    // Buffer read pipeline: one cycle of RAM latency, the returned beat used
    // at once or queued (two entries). A read of the beat being written in
    // the same cycle takes it from the write (fwd).
    reg  [BW-1:0] rd_addr;
    reg  [8:0]    rd_left;
    reg  [DW-1:0] oq0, oq1;
    reg  [1:0]    occ;
    reg           inflight;
    reg           e_live;       // the frame in flight may still be being written
    reg           fwd;
    reg  [DW-1:0] fwd_d;
    wire [DW-1:0] ram_q;
    wire [DW-1:0] rdq = fwd ? fwd_d : ram_q;

    // Which frame starts next.
    wire [QW-1:0] rq  = r[QW-1:0];
    wire [QW-1:0] sq  = q_send[QW-1:0];
    wire [31:0]   r_d = d_seq[rq] - r_base;
    wire r_in   = (r - q_head) < (q_send - q_head);     // r still names a sent, buffered frame
    wire r_hit  = r_in && d_peer[rq] == r_peer &&
                  (r_all ? !r_d[31] : (r_d < 32'd1024 && r_bitmap[r_d[9:0]]));
    wire go_nack = xs == X_IDLE && nack_req;
    wire go_ack  = xs == X_IDLE && !nack_req && ack_urgent;
    wire go_rt   = xs == X_IDLE && !nack_req && !ack_urgent && rt_valid;
    // Entries still being written.
    wire inc_sq  = w_mid && !w_drop && sq == q_last;
    wire inc_rq  = w_mid && !w_drop && rq == q_last;
    // The next new frame may start: it is whole, or comes one beat a cycle;
    // held, it has been released (else it is armed). go_now: the frame whose
    // first beat is being written now, nothing before it.
    wire new_ok  = (!inc_sq || w_ct) && (!d_hold[sq] || rel_ok);
    wire now_ok  = commit && fo_ct && (!fo_hold || rel_ok);
    wire go_idle = xs == X_IDLE && !nack_req && !ack_urgent && !rt_valid;
    wire go_q1   = go_idle && q_send != q_tail && new_ok;
    wire go_arm  = go_idle && q_send != q_tail && (!inc_sq || w_ct) && d_hold[sq] && !rel_ok;
    wire launch  = xs == X_ARMED && rel_ok;
    wire disarm  = xs == X_ARMED && !rel_ok && (nack_req || ack_urgent || rt_valid || dead[e_peer]);
    wire go_now  = go_idle && q_send == q_tail && now_ok;
    wire go_new  = go_q1 || go_now;
    wire go_lazy = go_idle && q_send == q_tail && !now_ok && ack_any;
    wire go_rtx  = xs == X_SCAN && r_in && r_hit;
    wire go_ctrl = go_nack || go_ack || go_lazy;
    wire go_data = go_new || go_rtx;
    wire [QW-1:0] go_q = go_rtx ? rq : sq;

    assign rt_take   = go_rt;
    assign nack_sent = go_nack;
    assign as_valid  = go_ctrl || go_data || launch;
    wire [NB-1:0] go_peer = go_now ? fo_peer : d_peer[go_q];
    assign as_peer   = launch ? e_peer : go_nack ? nack_peer[NB-1:0] : go_ctrl ? ack_peer[NB-1:0] : go_peer;
    assign cnt_rtx   = go_rtx;
    wire [15:0] unused_peers = nack_peer ^ ack_peer ^ rt_peer;

    // Control frame bytes.
    reg [1535:0] cv;
    integer i;
    wire [15:0] c_peer = go_nack ? nack_peer : ack_peer;
    always @* begin
        cv = 1536'd0;
        cv[7:0]   = 8'd1;
        cv[15:8]  = go_nack ? `T_NACK : `T_ACK;
        cv[23:16] = `WF_ACK;
        cv[32 +: 32] = be({node_id, c_peer});
        cv[160 +: 32] = be(go_nack ? nack_ack : q_ack_ctrl);
        if (go_nack) begin
            cv[96 +: 32]  = be({24'd0, nack_words, 2'b00});
            cv[224 +: 32] = be({24'd0, nack_words, 2'b00});
            for (i = 0; i < 32; i = i + 1)
                if (i < nack_words) cv[320 + 32*i +: 32] = be(nack_bitmap[32*i +: 32]);
        end
    end
    // Length of a control frame without its CRC, and its beats.
    wire [8:0] ctl_len = go_nack ? 9'd40 + {1'b0, nack_words, 2'b00} : 9'd40;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [8:0] ctl_end = ctl_len + B[8:0] - 9'd1;
    /* verilator lint_on UNUSEDSIGNAL */
    // The ack carried by the frame starting now (peer looked up in fs_link_ctl).
    assign q_peer = xs == X_SEND || xs == X_ARMED ? e_peer : (go_ctrl ? c_peer[NB-1:0] : go_peer);
    wire [31:0] q_ack_ctrl = q_ack;

    // Emission.
    wire          e_active = xs == X_SEND || launch;
    wire          have     = e_trail || (e_ram ? (occ != 2'd0 || inflight) : 1'b1);
    wire [DW-1:0] raw      = e_trail ? {DW{1'b0}} : e_ram ? (occ != 2'd0 ? oq0 : rdq) : vec[e_k[2:0]*DW +: DW];
    wire [LB-1:0] tail_lane = e_tail;
    wire          lastd    = !e_trail && e_k == e_n - 9'd1;   // the last data beat
    wire [QW:0]   q_sent   = xs == X_ARMED ? q_send + 1'b1 : q_send;
    wire          ack_now  = e_first && q_sent == q_tail;
    reg  [DW-1:0] stamped;
    always @* begin
        stamped = raw;
        if (e_ram && e_k == 9'd0 && !e_trail) begin
            stamped[23:16]    = `WF_SEQ | `WF_ACK | (ack_now ? `WF_ACK_NOW : 8'd0);
            stamped[128 +: 32] = be(e_seq);
            stamped[160 +: 32] = be(q_ack);
        end
    end
    wire [LB-2:0] words = (lastd && tail_lane != {LB{1'b0}}) ? {1'b0, tail_lane[LB-1:2]} : B[LB:2];
    wire [31:0]   crc_nx;
    fs_crc32c #(.DW(DW)) crcu (.crc_in(e_k == 9'd0 && !e_trail ? 32'hFFFF_FFFF : crc),
                              .data(stamped), .words(e_trail ? {(LB-1){1'b0}} : words),
                              .crc_out(crc_nx));
    wire [31:0] trailer = be(crc_nx ^ 32'hFFFF_FFFF);
    reg  [DW-1:0] out;
    reg  [B-1:0]  keep;
    reg           olast;
    always @* begin
        out = stamped; keep = {B{1'b1}}; olast = 1'b0;
        if (e_trail) begin
            out = {{(DW-32){1'b0}}, trailer};
            keep = {{(B-4){1'b0}}, 4'hF};
            olast = 1'b1;
        end else if (lastd && tail_lane != {LB{1'b0}}) begin
            out[8*tail_lane +: 32] = trailer;
            for (i = 0; i < B; i = i + 1) keep[i] = i < ({{(32-LB){1'b0}}, tail_lane} + 4);
            olast = 1'b1;
        end
    end
    wire port = e_peer[0];
    wire ready = port ? tx1_ready : tx0_ready;
    wire fire  = e_active && have && ready;
    assign tx0_valid = e_active && have && !port;
    assign tx1_valid = e_active && have && port;
    assign tx0_data = out;  assign tx1_data = out;
    assign tx0_keep = keep; assign tx1_keep = keep;
    assign tx0_last = olast; assign tx1_last = olast;

    // Buffer reads for the frame being sent.
    // A data frame's first beat is read in the cycle it is chosen.
    wire pop   = fire && e_ram && !e_trail;
    wire [2:0] qbusy = {1'b0, occ} + {2'b00, inflight} - {2'b00, pop};
    // A beat of a frame still being written is read once it is written (or
    // in the cycle it is).
    wire written = !e_live || rd_addr != b_wp[BW-1:0] || store;
    wire more  = e_active && e_ram && rd_left != 9'd0 && qbusy < 3'd2 && written;
    wire issue = more || go_data || go_arm;
    wire [BW-1:0] raddr = go_now ? b_wp[BW-1:0] : go_data || go_arm ? d_start[go_q] : rd_addr;

    fs_sdp_ram #(.WIDTH(DW), .DEPTH(TXB)) ram (
        .clk(clk), .we(store), .waddr(b_wp[BW-1:0]), .wdata(fo_data),
        .re(issue), .raddr(raddr), .rdata(ram_q)
    );

    // Work to do now; and frames that wait for their acknowledgement, whose
    // timers run on the tick.
    assign busy  = xs != X_IDLE || ack_any || nack_req || rt_valid;
    assign armed = q_head != q_tail;

    always @(posedge clk) begin
        if (rst) begin
            b_wp <= {(BW+1){1'b0}}; b_hp <= {(BW+1){1'b0}};
            w_mid <= 1'b0; w_drop <= 1'b0; w_ct <= 1'b0; rel_cnt <= 4'd0;
            e_live <= 1'b0; fwd <= 1'b0; fwd_d <= {DW{1'b0}};
            q_head <= {(QW+1){1'b0}}; q_send <= {(QW+1){1'b0}}; q_tail <= {(QW+1){1'b0}};
            xs <= X_IDLE; r <= {(QW+1){1'b0}}; r_peer <= {NB{1'b0}}; r_all <= 1'b0;
            r_base <= 32'd0; r_bitmap <= 1024'd0;
            e_ram <= 1'b0; e_first <= 1'b0; e_rtx <= 1'b0; e_peer <= {NB{1'b0}}; e_seq <= 32'd0;
            e_k <= 9'd0; e_n <= 9'd0; e_tail <= {LB{1'b0}}; crc <= 32'd0; e_trail <= 1'b0; vec <= 1536'd0;
            rd_addr <= {BW{1'b0}}; rd_left <= 9'd0; occ <= 2'd0; inflight <= 1'b0;
            oq0 <= {DW{1'b0}}; oq1 <= {DW{1'b0}};
            for (i = 0; i < TXQ; i = i + 1) begin
                d_peer[i] <= {NB{1'b0}}; d_seq[i] <= 32'd0; d_start[i] <= {BW{1'b0}};
                d_beats[i] <= 9'd0; d_len[i] <= 18'd0; d_hold[i] <= 1'b0;
            end
        end else begin
            // Writes from the AM sequencer.
            if (store) b_wp <= b_wp + 1'b1;
            if (wr) w_mid <= !fo_last;
            if (w_first) begin
                w_drop <= dead[fo_peer];
                w_ct   <= fo_ct;
            end
            if (commit) begin
                d_peer[q_tail[QW-1:0]]  <= fo_peer;
                d_seq[q_tail[QW-1:0]]   <= tc_seq;
                d_start[q_tail[QW-1:0]] <= b_wp[BW-1:0];
                d_beats[q_tail[QW-1:0]] <= fo_beats;
                d_len[q_tail[QW-1:0]]   <= fo_len;
                d_hold[q_tail[QW-1:0]]  <= fo_hold;
                q_tail <= q_tail + 1'b1;
            end
            // Held frames: a release counts up; a held frame sent for the
            // first time, dropped at its first beat or freed unsent counts down.
            rel_cnt <= rel_cnt + {3'd0, held_go}
                     - {3'd0, go_q1 && d_hold[sq]} - {3'd0, go_now && fo_hold} - {3'd0, launch}
                     - {3'd0, w_first && dead[fo_peer] && fo_hold}
                     - {3'd0, free_h && !h_sent && d_hold[hq] && !((go_q1 || launch) && sq == hq)};
            // Freeing the oldest frame.
            if (free_h) begin
                q_head <= q_head + 1'b1;
                b_hp   <= b_hp + {{(BW-8){1'b0}}, d_beats[hq]};
                if (!h_sent) q_send <= q_send + 1'b1;
            end
            // Buffer read queue.
            if (more) begin
                rd_addr <= rd_addr + 1'b1;
                rd_left <= rd_left - 9'd1;
            end
            inflight <= issue;
            fwd      <= issue && store && raddr == b_wp[BW-1:0];
            fwd_d    <= fo_data;
            // The queue is oq0, oq1 (occ of them) then the beat the RAM returns.
            case ({pop, inflight})
                2'b10: begin oq0 <= oq1; occ <= occ - 2'd1; end
                2'b01: begin
                    if (occ == 2'd0) oq0 <= rdq; else oq1 <= rdq;
                    occ <= occ + 2'd1;
                end
                2'b11: if (occ != 2'd0) begin   // (occ 0: the sender took the RAM's beat itself)
                    if (occ == 2'd1) oq0 <= rdq;
                    else begin oq0 <= oq1; oq1 <= rdq; end
                end
                default: ;
            endcase
            if (disarm) occ <= 2'd0;      // the armed first beat is read again later
            // Sender.
            case (xs)
                X_IDLE: begin
                    if (go_ctrl) begin
                        xs <= X_SEND; e_ram <= 1'b0; e_first <= 1'b0; e_rtx <= 1'b0;
                        e_peer <= c_peer[NB-1:0]; e_k <= 9'd0; e_trail <= 1'b0;
                        e_tail <= ctl_len[LB-1:0];
                        e_n    <= {{LB{1'b0}}, ctl_end[8:LB]};
                        vec <= cv;
                    end else if (go_rt) begin
                        xs <= X_SCAN; r <= q_head; r_peer <= rt_peer[NB-1:0]; r_all <= rt_all;
                        r_base <= rt_base; r_bitmap <= rt_bitmap;
                    end else if (go_now) begin
                        xs <= X_SEND; e_ram <= 1'b1; e_first <= 1'b1; e_rtx <= 1'b0;
                        e_peer <= fo_peer; e_seq <= tc_seq; e_k <= 9'd0; e_trail <= 1'b0;
                        e_n <= fo_beats; e_tail <= fo_len[LB-1:0]; e_live <= 1'b1;
                        rd_addr <= b_wp[BW-1:0] + 1'b1; rd_left <= fo_beats - 9'd1;
                        q_send <= q_send + 1'b1;
                    end else if (go_new || go_arm) begin
                        xs <= go_arm ? X_ARMED : X_SEND; e_ram <= 1'b1; e_first <= 1'b1; e_rtx <= 1'b0;
                        e_peer <= d_peer[sq]; e_seq <= d_seq[sq]; e_k <= 9'd0; e_trail <= 1'b0;
                        e_n <= d_beats[sq]; e_tail <= d_len[sq][LB-1:0]; e_live <= inc_sq;
                        rd_addr <= d_start[sq] + 1'b1; rd_left <= d_beats[sq] - 9'd1;
                        if (go_new) q_send <= q_send + 1'b1;
                    end
                end
                X_SCAN: begin
                    if (r == q_send) xs <= X_IDLE;
                    else if (!r_in) r <= q_head;       // its frame was freed meanwhile
                    else if (r_hit) begin
                        xs <= X_SEND; e_ram <= 1'b1; e_first <= 1'b0; e_rtx <= 1'b1;
                        e_peer <= d_peer[rq]; e_seq <= d_seq[rq]; e_k <= 9'd0; e_trail <= 1'b0;
                        e_n <= d_beats[rq]; e_tail <= d_len[rq][LB-1:0]; e_live <= inc_rq;
                        rd_addr <= d_start[rq] + 1'b1; rd_left <= d_beats[rq] - 9'd1;
                        r <= r + 1'b1;
                    end else r <= r + 1'b1;
                end
                X_ARMED: begin
                    if (disarm) xs <= X_IDLE;
                    if (launch) begin
                        q_send <= q_send + 1'b1;
                        xs <= X_SEND;
                        if (fire) begin              // (a first beat is never a frame's last)
                            crc <= crc_nx;
                            if (lastd) e_trail <= 1'b1;
                            else e_k <= e_k + 9'd1;
                        end
                    end
                end
                default: begin
                    if (fire) begin
                        crc <= crc_nx;
                        if (olast) begin
                            xs <= e_rtx ? X_SCAN : X_IDLE;
                        end else if (lastd) begin
                            e_trail <= 1'b1;       // the frame fills its last beat: trailer beat follows
                        end else begin
                            e_k <= e_k + 9'd1;
                        end
                    end
                end
            endcase
        end
    end
endmodule

`default_nettype wire
