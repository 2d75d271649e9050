// Link receiver, one per port: checks each incoming frame against the
// receiver rules of spec/wire.md (version, type, reserved bits, flags, the
// length and fragment rules, the exact length, CRC-32C and zero padding)
// plus the board's own (addressed to this node, from a node of the job, a
// payload no larger than a frame buffer takes) and hands the verdict to the
// link control (fs_link_ctl), which accepts a data frame only when its
// sequence number is the next one expected from its sender.
//
// The port is always ready: a data frame is written into the frame buffer
// as it arrives when there is room for all of it, and committed (with its
// parsed header, for the dispatcher) or rolled back at its last beat; a
// frame without room is still checked, so the acknowledgement it carries
// is used, and then dropped: its sender retransmits it. Acknowledgements
// thus keep flowing whatever the dispatcher is doing, which is what keeps
// the two directions of a link from waiting on each other.
`default_nettype none
`include "fs_defs.vh"

module fs_link_rx #(
    parameter integer DW      = 256,
    parameter integer BUF     = 256,    // frame buffer beats
    parameter integer FIDEPTH = 16,     // frames the buffer may hold
    parameter integer FRAG    = 4096,   // largest payload accepted in one frame
    parameter integer LB      = $clog2(DW / 8)
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [15:0]     node_id,
    input  wire [16:0]     node_count,
    // The port.
    input  wire            rx_valid,
    input  wire [DW-1:0]   rx_data,
    input  wire [DW/8-1:0] rx_keep,
    input  wire            rx_last,
    // Verdict of a frame that passed every check, in the cycle of its last beat.
    output wire            ev_valid,
    output wire            ev_ctrl,      // an ACK or a NACK
    output wire            ev_nack,
    output wire [15:0]     ev_src,
    output wire [31:0]     ev_seq,
    output wire [2:0]      ev_flags,     // {ACK_NOW, ACK, SEQ}
    output wire [31:0]     ev_ack,
    output wire            ev_stored,    // a data frame whose beats were kept
    output wire [5:0]      ev_words,     // NACK: bitmap words
    output wire [1023:0]   ev_bitmap,    // NACK: word j at [32j +: 32]
    input  wire            ev_accept,    // commit the stored frame
    // Events for the counters and error bits.
    output wire            crc_err,
    output wire            bad_pkt,
    output wire            acc,
    output wire [16:0]     acc_bytes,
    // Stored frames, to the dispatcher.
    output wire            fi_valid,
    input  wire            fi_ready,
    output wire [`FIW-1:0] fi_data,
    output wire            bt_valid,
    input  wire            bt_ready,
    output wire [DW-1:0]   bt_data
);
    localparam integer B    = DW / 8;
    localparam integer CAPB = 1536 / DW;          // beats holding bytes 0..191
    localparam integer BAW  = $clog2(BUF);
    localparam [31:0]  FRAG32 = FRAG;

    function [31:0] be32(input [31:0] lanes);      // four lanes, first is most significant
        be32 = {lanes[7:0], lanes[15:8], lanes[23:16], lanes[31:24]};
    endfunction

    // ---- per-beat state ------------------------------------------------------------
    reg  [17:0]   bi;           // beat index within the frame (saturating)
    reg  [17:0]   nbytes;       // bytes before this beat
    reg  [31:0]   crc;
    reg  [1535:0] cap;
    reg           keep_bad, pad_bad_q, store, overflow;
    reg  [8:0]    f_beats, written;
    reg  [4:0]    h_nargs;
    reg  [31:0]   h_plen;

    wire first = bi == 18'd0;

    // Beat 0 carries bytes 0..15 for any DW >= 128: type, nargs, payload_len.
    wire [7:0]  b0_type  = rx_data[15:8];
    wire [7:0]  b0_nargs = rx_data[71:64];
    wire [31:0] b0_plen  = be32(rx_data[96 +: 32]);
    wire [4:0]  nargs    = first ? (b0_nargs > 8'd16 ? 5'd16 : b0_nargs[4:0]) : h_nargs;
    wire [31:0] plen     = first ? b0_plen : h_plen;
    wire [17:0] p_off    = 18'd40 + {11'd0, nargs + {4'd0, nargs[0]}, 2'b00};
    wire [31:0] plen4    = plen > FRAG32 ? FRAG32 : plen;       // long ones are dropped anyway
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] pl_round = plen4 + 32'd3;
    wire [17:0] t_off    = p_off + pl_round[17:0];                // trailer position (low 2 bits cleared below)
    wire [17:0] f_end    = {t_off[17:2], 2'b00} + 18'd4 + (B[17:0] - 18'd1);
    /* verilator lint_on UNUSEDSIGNAL */
    wire [17:0] t_pos    = {t_off[17:2], 2'b00};
    wire [8:0]  beats0   = f_end[LB +: 9];
    wire        data0    = b0_type == `T_SHORT_REQ || b0_type == `T_MEDIUM_REQ || b0_type == `T_LONG_REQ ||
                           b0_type == `T_SHORT_REP || b0_type == `T_MEDIUM_REP || b0_type == `T_LONG_REP;

    // Room for the whole frame and its record.
    wire [BAW:0] buf_free;
    wire [$clog2(FIDEPTH):0] fi_count;
    wire store0 = data0 && b0_plen <= FRAG32 && b0_nargs <= 8'd16
               && {{(9-BAW-1 > 0 ? 9-BAW-1 : 0){1'b0}}, buf_free} >= {{(BAW+1-9 > 0 ? BAW+1-9 : 0){1'b0}}, beats0}
               && fi_count < FIDEPTH[$clog2(FIDEPTH):0];
    wire store_now = first ? store0 : store;
    wire [8:0] beats_now = first ? beats0 : f_beats;

    // Bytes in this beat (keep is contiguous from lane 0, a multiple of 4).
    integer i;
    reg [LB:0] nb;
    reg        keep_ok;
    always @* begin
        nb = {(LB+1){1'b0}};
        keep_ok = 1'b1;
        for (i = 0; i < B; i = i + 1)
            if (rx_keep[i]) nb = nb + {{LB{1'b0}}, 1'b1};
        for (i = 1; i < B; i = i + 1)
            if (rx_keep[i] && !rx_keep[i-1]) keep_ok = 1'b0;
        if (nb[1:0] != 2'd0 || nb == {(LB+1){1'b0}}) keep_ok = 1'b0;
        if (!rx_last && nb != B[LB:0]) keep_ok = 1'b0;
    end

    // Padding bytes must be zero: argument padding, and payload padding up to the trailer.
    wire [17:0] argpad = 18'd40 + {11'd0, nargs, 2'b00};
    wire [17:0] plend  = p_off + plen4[17:0];
    reg pad_bad;
    reg [17:0] pos;
    always @* begin
        pad_bad = 1'b0;
        for (i = 0; i < B; i = i + 1) begin
            pos = {bi[17-LB:0], {LB{1'b0}}} + i[17:0];
            if (rx_keep[i] && rx_data[8*i +: 8] != 8'd0 &&
                ((pos >= argpad && pos < p_off) || (pos >= plend && pos < t_pos)))
                pad_bad = 1'b1;
        end
    end

    // CRC over every word but the trailer.
    wire [LB-2:0] words  = nb[LB:2] - (rx_last ? {{(LB-2){1'b0}}, 1'b1} : {(LB-1){1'b0}});
    wire [31:0]   crc_nx;
    fs_crc32c #(.DW(DW)) crcu (.crc_in(first ? 32'hFFFF_FFFF : crc), .data(rx_data),
                              .words(words), .crc_out(crc_nx));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [LB:0]   tr_lane = nb - {{(LB-2){1'b0}}, 3'd4};   // 0..B-4
    /* verilator lint_on UNUSEDSIGNAL */
    wire [31:0]   trailer = be32(rx_data[8*tr_lane[LB-1:0] +: 32]);

    // The captured header area with this beat in it.
    // The header capture with this beat in its place (a beat a slice, so
    // each slice is one 2-way choice rather than a shift of the whole).
    reg [1535:0] capn;
    always @* begin
        capn = cap;
        for (i = 0; i < CAPB; i = i + 1)
            if (bi == i[17:0]) capn[i*DW +: DW] = rx_data & keep_mask(rx_keep);
    end
    function [DW-1:0] keep_mask(input [DW/8-1:0] k);
        integer j;
        for (j = 0; j < B; j = j + 1) keep_mask[8*j +: 8] = {8{k[j]}};
    endfunction

    // ---- the receiver rules (spec/wire.md), on the whole header -------------------
    wire [7:0]  c_ver   = capn[7:0];
    wire [7:0]  c_type  = capn[15:8];
    wire [7:0]  c_flags = capn[23:16];
    wire [7:0]  c_hd    = capn[31:24];
    wire [15:0] c_src   = {capn[39:32], capn[47:40]};
    wire [15:0] c_dst   = {capn[55:48], capn[63:56]};
    wire [7:0]  c_nargs = capn[71:64];
    wire [23:0] c_res   = capn[95:72];
    wire [31:0] c_plen  = be32(capn[96 +: 32]);
    wire [31:0] c_seq   = be32(capn[128 +: 32]);
    wire [31:0] c_ack   = be32(capn[160 +: 32]);
    wire [31:0] c_foff  = be32(capn[192 +: 32]);
    wire [31:0] c_total = be32(capn[224 +: 32]);
    wire [63:0] c_off   = {be32(capn[256 +: 32]), be32(capn[288 +: 32])};

    wire c_am    = c_type == `T_SHORT_REQ || c_type == `T_MEDIUM_REQ || c_type == `T_LONG_REQ ||
                   c_type == `T_SHORT_REP || c_type == `T_MEDIUM_REP || c_type == `T_LONG_REP;
    wire c_ackt  = c_type == `T_ACK;
    wire c_nackt = c_type == `T_NACK;
    wire c_ctrl  = c_ackt || c_nackt;
    wire c_short = c_am && c_type[1:0] == 2'd1;
    wire c_med   = c_am && c_type[1:0] == 2'd2;
    wire c_long  = c_am && c_type[1:0] == 2'd3;
    wire [31:0] c_limit = c_med ? 32'd4096 : c_long ? 32'd65536 : c_nackt ? 32'd128 : 32'd0;
    wire [32:0] c_fend  = {1'b0, c_foff} + {1'b0, c_plen};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [64:0] c_oend  = {1'b0, c_off} + {33'd0, c_total};   // only the carry matters
    /* verilator lint_on UNUSEDSIGNAL */

    wire rules_ok =
           c_ver == 8'd1
        && (c_am || c_ctrl)
        && c_res == 24'd0
        && c_nargs <= 8'd16
        && (c_flags & 8'hF8) == 8'd0
        && (c_ctrl ? (c_hd == 8'd0 && c_nargs == 8'd0 && c_flags == `WF_ACK) : c_hd != 8'd0)
        && (c_seq == 32'd0 || c_flags[0]) && (c_ack == 32'd0 || c_flags[1])
        && (!c_short || (c_plen == 32'd0 && c_total == 32'd0))
        && c_total <= c_limit
        && c_fend <= {1'b0, c_total}
        && (c_total == 32'd0 || c_plen != 32'd0)
        && c_foff[2:0] == 3'd0
        && (c_plen[2:0] == 3'd0 || c_fend == {1'b0, c_total})
        && (!c_nackt || (c_foff == 32'd0 && c_plen == c_total))
        && (!c_nackt || (c_total != 32'd0 && c_total[1:0] == 2'd0))
        && (c_long ? !c_oend[64] : c_off == 64'd0);

    // NACK bitmap: word j is the big-endian word at byte 40 + 4j.
    reg [1023:0] bitmap;
    always @* begin
        for (i = 0; i < 32; i = i + 1) bitmap[32*i +: 32] = be32(capn[320 + 32*i +: 32]);
    end
    wire [5:0] nwords  = c_total[7:2] > 6'd32 ? 6'd32 : c_total[7:2];
    wire [4:0] lastw   = nwords[4:0] - 5'd1;
    wire       nack_ok = !c_nackt || bitmap[32*lastw +: 32] != 32'd0;

    wire [17:0] total_bytes = nbytes + {{(17-LB){1'b0}}, nb};
    wire [31:0] exp_len = {14'd0, t_pos} + 32'd4;
    wire end_beat = rx_valid && rx_last;
    wire len_ok   = {14'd0, total_bytes} == exp_len && plen <= FRAG32 && !overflow;
    wire crc_ok   = (crc_nx ^ 32'hFFFF_FFFF) == trailer;
    wire form_ok  = len_ok && !keep_bad && keep_ok && !(pad_bad_q || pad_bad);
    wire board_ok = c_dst == node_id && {1'b0, c_src} < node_count && c_src != node_id;
    wire good     = form_ok && crc_ok && rules_ok && nack_ok && board_ok;

    assign ev_valid  = end_beat && good;
    assign ev_ctrl   = c_ctrl;
    assign ev_nack   = c_nackt;
    assign ev_src    = c_src;
    assign ev_seq    = c_seq;
    assign ev_flags  = c_flags[2:0];
    assign ev_ack    = c_ack;
    assign ev_words  = nwords;
    assign ev_bitmap = bitmap;
    wire   wr_en     = rx_valid && store_now && written != beats_now;
    wire   complete  = (written + {8'd0, wr_en}) == beats_now;
    assign ev_stored = store_now && complete && c_am;
    assign crc_err   = end_beat && !crc_ok;
    assign bad_pkt   = end_beat && crc_ok && !good;

    wire   commit    = ev_valid && ev_stored && ev_accept;
    assign acc       = commit;
    assign acc_bytes = c_plen[16:0];

    // Frame record for the dispatcher.
    reg [`FIW-1:0] fi;
    always @* begin
        fi = {`FIW{1'b0}};
        fi[`FI_TYPE]    = c_type;
        fi[`FI_HANDLER] = c_hd;
        fi[`FI_SRC]     = c_src;
        fi[`FI_NARGS]   = c_nargs[4:0];
        fi[`FI_PLEN]    = c_plen[16:0];
        fi[`FI_FOFF]    = c_foff[16:0];
        fi[`FI_TOTAL]   = c_total[16:0];
        fi[`FI_BEATS]   = beats_now;
        fi[`FI_OFFSET]  = c_off;
        for (i = 0; i < 16; i = i + 1)
            if (i < c_nargs) fi[161 + 32*i +: 32] = bitmap[32*i +: 32];
    end

    fs_fifo #(.W(`FIW), .DEPTH(FIDEPTH)) fiq (
        .clk(clk), .rst(rst),
        .in_valid(commit), .in_ready(unused_fi_ready), .in_data(fi),
        .out_valid(fi_valid), .out_ready(fi_ready), .out_data(fi_data), .count(fi_count)
    );
    wire unused_fi_ready;

    fs_frame_buf #(.W(DW), .DEPTH(BUF)) fb (
        .clk(clk), .rst(rst),
        .wr_en(wr_en), .wr_data(rx_data), .commit(commit), .rollback(end_beat && !commit),
        .free(buf_free),
        .rd_valid(bt_valid), .rd_ready(bt_ready), .rd_data(bt_data)
    );

    always @(posedge clk) begin
        if (rst) begin
            bi <= 18'd0; nbytes <= 18'd0; crc <= 32'hFFFF_FFFF; cap <= 1536'd0;
            keep_bad <= 1'b0; pad_bad_q <= 1'b0; store <= 1'b0; overflow <= 1'b0;
            f_beats <= 9'd0; written <= 9'd0; h_nargs <= 5'd0; h_plen <= 32'd0;
        end else if (rx_valid) begin
            if (rx_last) begin
                bi <= 18'd0; nbytes <= 18'd0; cap <= 1536'd0;
                keep_bad <= 1'b0; pad_bad_q <= 1'b0; store <= 1'b0; overflow <= 1'b0;
                written <= 9'd0;
            end else begin
                if (bi != 18'h3FFFF) bi <= bi + 18'd1;
                if (total_bytes[17]) overflow <= 1'b1;
                nbytes <= total_bytes;
                crc <= crc_nx;
                cap <= capn;
                keep_bad <= keep_bad || !keep_ok;
                pad_bad_q <= pad_bad_q || pad_bad;
                written <= written + {8'd0, wr_en};
                if (first) begin
                    store <= store0;
                    f_beats <= beats0;
                    h_nargs <= nargs;
                    h_plen <= b0_plen;
                end
            end
        end
    end
endmodule

`default_nettype wire
