// Link control: the reliability layer of spec/wire.md ("Reliable transport
// fields") for every peer of this node. Per peer it keeps
//
//   tx_next  the sequence number the next frame to that peer gets
//   tx_una   the oldest one it has not acknowledged (its cumulative ack)
//   rx_exp   the next sequence number expected from it
//
// A sequenced data frame is accepted only if it is the expected one (the
// receivers keep no out-of-order frames); a duplicate makes the next
// acknowledgement urgent, a frame from beyond a gap makes a NACK naming
// every number from rx_exp to the highest one seen, which the sender
// retransmits. Acknowledgements ride on every frame the sender sends to
// that peer, or go alone as an ACK when one is owed for ack_delay cycles,
// at once after a duplicate or an ACK_NOW frame. A peer with unacknowledged
// frames gets them all retransmitted after rto (doubling per retry up to
// rto_max, reset by progress) and is declared dead after peer_timeout ticks
// without progress (ERR_STATUS.PEER_TIMEOUT); its frames are then dropped
// and its pending requests fail with Timeout. While the core is not
// enabled it takes no frame at all.
`default_nettype none

module fs_link_ctl #(
    parameter integer MAX_NODES = 16,
    parameter integer NB = $clog2(MAX_NODES)   // node ids are below MAX_NODES
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 enabled,
    input  wire                 tick,          // timebase (1 us)
    input  wire [31:0]          rto_ticks,
    input  wire [31:0]          rto_max_ticks,
    input  wire [31:0]          peer_timeout_ticks,
    input  wire [15:0]          ack_delay_cycles,
    input  wire [15:0]          nack_hold_ticks,
    // Receiver verdicts, two ports.
    input  wire [1:0]           ev_valid,
    input  wire [1:0]           ev_ctrl,
    input  wire [1:0]           ev_nack,
    input  wire [31:0]          ev_src,        // {port1, port0}
    input  wire [63:0]          ev_seq,
    input  wire [5:0]           ev_flags,
    input  wire [63:0]          ev_ack,
    input  wire [1:0]           ev_stored,
    input  wire [11:0]          ev_words,
    input  wire [2047:0]        ev_bitmap,
    output wire [1:0]           ev_accept,
    // A frame committed to the transmit buffer takes the next sequence number.
    input  wire                 tc_valid,
    input  wire [NB-1:0]        tc_peer,
    output wire [31:0]          tc_seq,
    // Lookups for the sender and the transmit buffer.
    input  wire [NB-1:0]        q_peer,        // frame being sent: ack to stamp
    output wire [31:0]          q_ack,
    input  wire [NB-1:0]        f_peer,        // oldest buffered frame: is it acknowledged?
    output wire [31:0]          f_una,
    output wire [MAX_NODES-1:0] dead,
    // Acknowledgement sent to a peer (alone or riding on a frame).
    input  wire                 as_valid,
    input  wire [NB-1:0]        as_peer,
    // An ACK to send.
    output reg                  ack_urgent,
    output reg                  ack_any,
    output reg  [15:0]          ack_peer,
    // A NACK to send.
    output reg                  nack_req,
    output reg  [15:0]          nack_peer,
    output wire [31:0]          nack_ack,
    output wire [5:0]           nack_words,
    output wire [1023:0]        nack_bitmap,
    input  wire                 nack_sent,
    // Retransmission requests.
    output wire                 rt_valid,
    output wire [15:0]          rt_peer,
    output wire                 rt_all,
    output wire [31:0]          rt_base,
    output wire [1023:0]        rt_bitmap,
    input  wire                 rt_take,
    // A NACK is owed (perhaps held off).
    output wire                 nack_owed,
    // Errors.
    output reg                  ev_timeout,
    output reg  [15:0]          ev_timeout_peer
);

    reg [31:0] tx_next [0:MAX_NODES-1];
    reg [31:0] tx_una  [0:MAX_NODES-1];
    reg [31:0] rx_exp  [0:MAX_NODES-1];
    reg [31:0] nk_top  [0:MAX_NODES-1];
    reg [31:0] rto_cnt [0:MAX_NODES-1];
    reg [31:0] rto_cur [0:MAX_NODES-1];
    reg [31:0] silent  [0:MAX_NODES-1];
    reg [15:0] ack_age [0:MAX_NODES-1];
    reg [15:0] nk_hold [0:MAX_NODES-1];
    reg [MAX_NODES-1:0] ack_pend, ack_urg, nk_pend, rtx_pend, dead_q;

    // A received NACK waiting for the sender.
    reg          rn_valid;
    reg [15:0]   rn_peer;
    reg [31:0]   rn_base;
    reg [1023:0] rn_bitmap;

    assign dead  = dead_q;
    assign nack_owed = |(nk_pend & ~dead_q);
    assign tc_seq = tx_next[tc_peer];
    assign q_ack  = rx_exp[q_peer];
    assign f_una  = tx_una[f_peer];

    // ---- acceptance of the two ports' frames ---------------------------------------
    wire [NB-1:0] s0 = ev_src[NB-1:0];
    wire [NB-1:0] s1 = ev_src[16 +: NB];
    // A core that is not enabled serves no link (spec/registers.md 4.2): it
    // ignores every frame, acknowledging nothing, so a peer that started
    // first retransmits until this node is configured. Port 1's frame is
    // ignored in a cycle where port 0 has one from the same peer.
    wire          v0 = enabled && ev_valid[0];
    wire          v1 = enabled && ev_valid[1] && !(ev_valid[0] && s0 == s1);
    wire [31:0]   d0 = ev_seq[31:0] - rx_exp[s0];
    wire [31:0]   d1 = ev_seq[63:32] - rx_exp[s1];
    assign ev_accept[0] = v0 && !ev_ctrl[0] && ev_stored[0] && (!ev_flags[0] || d0 == 32'd0);
    assign ev_accept[1] = v1 && !ev_ctrl[1] && ev_stored[1] && (!ev_flags[3] || d1 == 32'd0);

    // ---- what the sender should do next --------------------------------------------
    integer p;
    reg [NB-1:0] nk_i;
    always @* begin
        ack_urgent = 1'b0; ack_any = 1'b0; ack_peer = 16'd0;
        nack_req = 1'b0; nack_peer = 16'd0; nk_i = {NB{1'b0}};
        for (p = MAX_NODES - 1; p >= 0; p = p - 1) begin
            if (ack_pend[p] && !dead_q[p]) begin
                ack_any = 1'b1;
                if (ack_urg[p] || ack_age[p] >= ack_delay_cycles) begin
                    ack_urgent = 1'b1; ack_peer = p[15:0];
                end
            end
            if (nk_pend[p] && nk_hold[p] == 16'd0 && !dead_q[p]) begin
                nack_req = 1'b1; nack_peer = p[15:0]; nk_i = p[NB-1:0];
            end
        end
        if (!ack_urgent)
            for (p = MAX_NODES - 1; p >= 0; p = p - 1)
                if (ack_pend[p] && !dead_q[p]) ack_peer = p[15:0];
    end

    // The NACK names rx_exp .. nk_top (everything from the gap on was dropped).
    wire [31:0]   nk_span  = nk_top[nk_i] - rx_exp[nk_i] + 32'd1;
    wire [10:0]   nk_count = nk_span > 32'd1024 ? 11'd1024 : nk_span[10:0];
    // The first nk_count bits set: whole words below word nk_count / 32,
    // nk_count % 32 low bits of that word.
    wire [31:0]   nk_part  = (32'd1 << nk_count[4:0]) - 32'd1;
    reg  [1023:0] nk_mask;
    integer w;
    always @* begin
        for (w = 0; w < 32; w = w + 1)
            nk_mask[32*w +: 32] = nk_count[10:5] > w[5:0] ? 32'hFFFF_FFFF
                                : nk_count[10:5] == w[5:0] ? nk_part : 32'd0;
    end
    wire [10:0]   nk_w     = nk_count + 11'd31;
    assign nack_ack    = rx_exp[nk_i];
    assign nack_words  = nk_w[10:5] > 6'd32 ? 6'd32 : nk_w[10:5];
    assign nack_bitmap = nk_mask;
    wire unused_nk = |nk_w[4:0];

    // Retransmission: a received NACK first, then peers whose timer expired.
    reg [NB-1:0] rt_i;
    reg          rt_any;
    always @* begin
        rt_any = 1'b0; rt_i = {NB{1'b0}};
        for (p = MAX_NODES - 1; p >= 0; p = p - 1)
            if (rtx_pend[p] && !dead_q[p]) begin rt_any = 1'b1; rt_i = p[NB-1:0]; end
    end
    assign rt_valid  = rn_valid || rt_any;
    assign rt_peer   = rn_valid ? rn_peer : {{(16-NB){1'b0}}, rt_i};
    assign rt_all    = !rn_valid;
    assign rt_base   = rn_valid ? rn_base : tx_una[rt_i];
    assign rt_bitmap = rn_bitmap;

    // ---- state ---------------------------------------------------------------------
    // An acknowledgement value a from peer q is new if it lies after tx_una and
    // not after tx_next.
    function ack_new(input [31:0] a, input [31:0] una, input [31:0] nxt);
        ack_new = (a - una) != 32'd0 && (a - una) <= (nxt - una);
    endfunction

    reg [MAX_NODES-1:0] progress;
    always @* begin
        progress = {MAX_NODES{1'b0}};
        if (v0 && ev_flags[1] && ack_new(ev_ack[31:0], tx_una[s0], tx_next[s0])) progress[s0] = 1'b1;
        if (v1 && ev_flags[4] && ack_new(ev_ack[63:32], tx_una[s1], tx_next[s1])) progress[s1] = 1'b1;
    end

    // Per-port effect of a data frame on the receive state of its sender.
    task automatic rx_frame(input [NB-1:0] s, input [31:0] seq, input [31:0] d,
                            input acc, input ack_now);
        begin
            if (d == 32'd0 && acc) begin
                rx_exp[s]   <= rx_exp[s] + 32'd1;
                ack_pend[s] <= 1'b1;
                if (ack_now) ack_urg[s] <= 1'b1;
            end else if (d[31]) begin
                ack_pend[s] <= 1'b1;          // a duplicate: answer at once
                ack_urg[s]  <= 1'b1;
            end else if (d < 32'd1024) begin
                if (!nk_pend[s] || (seq - nk_top[s]) < 32'h8000_0000) nk_top[s] <= seq;
                nk_pend[s] <= 1'b1;           // a gap, or no room for the expected one
            end
        end
    endtask

    integer q;
    always @(posedge clk) begin
        if (rst) begin
            for (q = 0; q < MAX_NODES; q = q + 1) begin
                tx_next[q] <= 32'd0; tx_una[q] <= 32'd0; rx_exp[q] <= 32'd0; nk_top[q] <= 32'd0;
                rto_cnt[q] <= 32'd0; rto_cur[q] <= 32'd0; silent[q] <= 32'd0;
                ack_age[q] <= 16'd0; nk_hold[q] <= 16'd0;
            end
            ack_pend <= {MAX_NODES{1'b0}}; ack_urg <= {MAX_NODES{1'b0}};
            nk_pend <= {MAX_NODES{1'b0}}; rtx_pend <= {MAX_NODES{1'b0}}; dead_q <= {MAX_NODES{1'b0}};
            rn_valid <= 1'b0; rn_peer <= 16'd0; rn_base <= 32'd0; rn_bitmap <= 1024'd0;
            ev_timeout <= 1'b0; ev_timeout_peer <= 16'd0;
        end else begin
            ev_timeout <= 1'b0;
            // Timers.
            for (q = 0; q < MAX_NODES; q = q + 1) begin
                if (ack_pend[q] && ack_age[q] != 16'hFFFF) ack_age[q] <= ack_age[q] + 16'd1;
                if (tick && nk_hold[q] != 16'd0) nk_hold[q] <= nk_hold[q] - 16'd1;
                if (progress[q] || tx_una[q] == tx_next[q] || dead_q[q] || !enabled) begin
                    rto_cnt[q] <= 32'd0;
                    silent[q]  <= 32'd0;
                    rto_cur[q] <= rto_ticks;
                end else if (tick) begin
                    silent[q] <= silent[q] + 32'd1;
                    if (rto_cnt[q] + 32'd1 >= rto_cur[q]) begin
                        rto_cnt[q]  <= 32'd0;
                        rtx_pend[q] <= 1'b1;
                        rto_cur[q]  <= (rto_cur[q] << 1) > rto_max_ticks ? rto_max_ticks : rto_cur[q] << 1;
                    end else begin
                        rto_cnt[q] <= rto_cnt[q] + 32'd1;
                    end
                    if (silent[q] + 32'd1 >= peer_timeout_ticks && !ev_timeout) begin
                        dead_q[q] <= 1'b1;
                        ev_timeout <= 1'b1;
                        ev_timeout_peer <= q[15:0];
                    end
                end
                if (nk_pend[q] && (rx_exp[q] - nk_top[q] - 32'd1) < 32'h8000_0000) nk_pend[q] <= 1'b0;
            end
            // Acknowledgements received.
            if (progress[s0]) tx_una[s0] <= ev_ack[31:0];
            if (progress[s1] && s1 != s0) tx_una[s1] <= ev_ack[63:32];
            // Data frames.
            if (v0 && !ev_ctrl[0] && ev_flags[0])
                rx_frame(s0, ev_seq[31:0], d0, ev_accept[0], ev_flags[2]);
            if (v1 && !ev_ctrl[1] && ev_flags[3])
                rx_frame(s1, ev_seq[63:32], d1, ev_accept[1], ev_flags[5]);
            // NACKs received.
            if (!rn_valid && v0 && ev_nack[0]) begin
                rn_valid <= 1'b1; rn_peer <= ev_src[15:0]; rn_base <= ev_ack[31:0];
                rn_bitmap <= ev_bitmap[1023:0];
            end else if (!rn_valid && v1 && ev_nack[1]) begin
                rn_valid <= 1'b1; rn_peer <= ev_src[31:16]; rn_base <= ev_ack[63:32];
                rn_bitmap <= ev_bitmap[2047:1024];
            end
            if (rt_take) begin
                if (rn_valid) rn_valid <= 1'b0;
                else rtx_pend[rt_i] <= 1'b0;
            end
            // Sequence numbers of new frames.
            if (tc_valid) tx_next[tc_peer] <= tx_next[tc_peer] + 32'd1;
            // Acknowledgements and NACKs sent.
            if (as_valid) begin
                ack_pend[as_peer] <= 1'b0;
                ack_urg[as_peer]  <= 1'b0;
                ack_age[as_peer]  <= 16'd0;
            end
            if (nack_sent) begin
                nk_pend[nk_i] <= 1'b0;
                nk_hold[nk_i] <= nack_hold_ticks;
            end
            if (!enabled) rtx_pend <= {MAX_NODES{1'b0}};
        end
    end

    wire [11:0] unused_words = ev_words;
endmodule

`default_nettype wire
