// Read engine: streams `len` bytes of board memory starting at byte address
// `addr` out of an AXI4 read port, re-aligned so that the first byte sits at
// lane `lane` of the first output beat and every byte outside the run is
// zero. Bursts are split at 4 KiB boundaries (AXI4 rule) and issued ahead
// of the consumer as far as the data buffer has room for their beats, so a
// long run streams at one beat per cycle whatever the memory latency.
// Commands queue (QDEPTH); each completes in order.
`default_nettype none

module fs_rd_stream #(
    parameter integer DW     = 256,
    parameter integer AW     = 40,
    parameter integer IDW    = 1,
    parameter [IDW-1:0] ID   = {IDW{1'b0}},
    parameter integer BUF    = 256,   // data buffer beats (power of two)
    parameter integer QDEPTH = 4,
    parameter integer LB     = $clog2(DW / 8)
) (
    input  wire           clk,
    input  wire           rst,
    // Commands.
    input  wire           cmd_valid,
    output wire           cmd_ready,
    input  wire [AW-1:0]  cmd_addr,
    input  wire [16:0]    cmd_len,   // 1..65536
    input  wire [LB-1:0]  cmd_lane,
    // Data out.
    output wire           out_valid,
    input  wire           out_ready,
    output wire [DW-1:0]  out_data,
    output wire           out_last,
    output wire           idle,
    output reg            err,       // a read returned an error response
    // AXI4 read address and data channels.
    output wire           m_arvalid,
    input  wire           m_arready,
    output wire [AW-1:0]  m_araddr,
    output wire [7:0]     m_arlen,
    output wire [IDW-1:0] m_arid,
    input  wire           m_rvalid,
    output wire           m_rready,
    input  wire [DW-1:0]  m_rdata,
    input  wire [1:0]     m_rresp
);
    localparam integer B   = DW / 8;
    localparam integer BAW = $clog2(BUF);
    localparam integer NW  = 18 - LB;             // beat counts
    localparam integer QW  = LB + LB + 17;        // a0, lane, len
    localparam integer PAGE_I = 4096 / B;
    localparam [NW-1:0] PAGE_BEATS = PAGE_I[NW-1:0];
    localparam [NW-1:0] MAX_BURST  = 256;
    localparam [NW-1:0] ONE        = 1;

    // ---- address side ---------------------------------------------------
    reg              ar_active;
    reg  [AW-1:0]    ar_addr;
    reg  [NW-1:0]    ar_left;
    reg  [BAW:0]     resv;          // beats requested, not yet arrived
    wire [BAW:0]     buf_free;

    wire             dq_in_ready;
    /* verilator lint_off UNUSEDSIGNAL */
    // Low bits of the beat-count sums are lanes, unused; the read response's
    // bit 0 only tells SLVERR from DECERR.
    wire [1:0]       unused_resp = m_rresp;
    wire [17:0]      in_end  = {1'b0, cmd_len} + {{(18-LB){1'b0}}, cmd_addr[LB-1:0]} + (B[17:0] - 18'd1);
    wire [NW-1:0]    to_page = PAGE_BEATS - {{(NW-12+LB){1'b0}}, ar_addr[11:LB]};
    wire [NW-1:0]    lim1    = ar_left < to_page ? ar_left : to_page;
    wire [NW-1:0]    blen    = lim1 > MAX_BURST ? MAX_BURST : lim1;
    wire [NW-1:0]    blen_m1 = blen - ONE;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [BAW:0]     room    = buf_free - resv;
    wire             credit  = {{(32-BAW-1){1'b0}}, room} >= {{(32-NW){1'b0}}, blen};

    assign cmd_ready = !ar_active && dq_in_ready;
    assign m_arvalid = ar_active && credit;
    assign m_araddr  = ar_addr;
    assign m_arlen   = blen_m1[7:0];
    assign m_arid    = ID;
    assign m_rready  = 1'b1;    // buffer space was reserved before the request

    wire ar_fire = m_arvalid && m_arready;
    // A burst never exceeds 256 beats, and BUF holds at least that many.
    wire [BAW:0] blen_r = blen[BAW:0];
    wire r_fire  = m_rvalid;

    always @(posedge clk) begin
        if (rst) begin
            ar_active <= 1'b0;
            ar_addr   <= {AW{1'b0}};
            ar_left   <= {NW{1'b0}};
            resv      <= {(BAW+1){1'b0}};
            err       <= 1'b0;
        end else begin
            err <= r_fire && m_rresp[1];
            if (cmd_valid && cmd_ready) begin
                ar_active <= 1'b1;
                ar_addr   <= {cmd_addr[AW-1:LB], {LB{1'b0}}};
                ar_left   <= in_end[17:LB];
            end else if (ar_fire) begin
                ar_addr <= ar_addr + {{(AW-NW-LB){1'b0}}, blen, {LB{1'b0}}};
                ar_left <= ar_left - blen;
                if (ar_left == blen) ar_active <= 1'b0;
            end
            resv <= resv + (ar_fire ? blen_r : {(BAW+1){1'b0}})
                         - {{BAW{1'b0}}, r_fire};
        end
    end

    // ---- data side -------------------------------------------------------
    wire          dq_valid;
    wire [QW-1:0] dq_data;
    reg           d_active;
    reg  [LB-1:0] d_a0;
    reg  [NW-1:0] d_k, d_n;
    reg  [LB-1:0] d_end;   // lanes used in the last input beat (0: all)
    wire [NW-1:0] d_last = d_n - ONE;

    /* verilator lint_off UNUSEDSIGNAL */
    wire [$clog2(QDEPTH):0] unused_dq_count;
    /* verilator lint_on UNUSEDSIGNAL */
    fs_fifo #(.W(QW), .DEPTH(QDEPTH)) dq (
        .clk(clk), .rst(rst),
        .in_valid(cmd_valid && cmd_ready), .in_ready(dq_in_ready),
        .in_data({cmd_addr[LB-1:0], cmd_lane, cmd_len}),
        .out_valid(dq_valid), .out_ready(!d_active && !ra_busy), .out_data(dq_data),
        .count(unused_dq_count)
    );

    wire          rb_valid, rb_ready;
    wire [DW-1:0] rb_data;
    fs_frame_buf #(.W(DW), .DEPTH(BUF)) rbuf (
        .clk(clk), .rst(rst),
        .wr_en(r_fire), .wr_data(m_rdata), .commit(1'b1), .rollback(1'b0),
        .free(buf_free),
        .rd_valid(rb_valid), .rd_ready(rb_ready), .rd_data(rb_data)
    );

    wire [LB-1:0] q_a0   = dq_data[QW-1 -: LB];
    wire [LB-1:0] q_lane = dq_data[17 +: LB];
    wire [16:0]   q_len  = dq_data[16:0];
    wire [17:0]   q_end  = {1'b0, q_len} + {{(18-LB){1'b0}}, q_a0};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [17:0]   q_beats = q_end + (B[17:0] - 18'd1);
    /* verilator lint_on UNUSEDSIGNAL */
    wire          ra_start = dq_valid && !d_active && !ra_busy;
    wire          ra_busy;

    // Zero the bytes of the first and last beats that lie outside the run.
    integer i;
    reg [DW-1:0] masked;
    always @* begin
        masked = rb_data;
        for (i = 0; i < B; i = i + 1) begin
            if (d_k == {NW{1'b0}} && i < d_a0) masked[8*i +: 8] = 8'd0;
            if (d_k == d_last && d_end != {LB{1'b0}} && i >= d_end) masked[8*i +: 8] = 8'd0;
        end
    end

    wire ra_in_ready;
    assign rb_ready = d_active && ra_in_ready;

    fs_realign #(.DW(DW)) ra (
        .clk(clk), .rst(rst),
        .start(ra_start), .in_lane(q_a0), .out_lane(q_lane), .len(q_len), .busy(ra_busy),
        .in_valid(d_active && rb_valid), .in_ready(ra_in_ready), .in_data(masked),
        .out_valid(out_valid), .out_ready(out_ready), .out_data(out_data), .out_last(out_last)
    );

    always @(posedge clk) begin
        if (rst) begin
            d_active <= 1'b0;
            d_a0 <= {LB{1'b0}};
            d_k <= {NW{1'b0}};
            d_n <= {NW{1'b0}};
            d_end <= {LB{1'b0}};
        end else if (ra_start) begin
            d_active <= 1'b1;
            d_a0  <= q_a0;
            d_k   <= {NW{1'b0}};
            d_n   <= q_beats[17:LB];
            d_end <= q_end[LB-1:0];
        end else begin
            if (rb_valid && rb_ready) d_k <= d_k + ONE;
            if (d_active && !ra_busy) d_active <= 1'b0;
        end
    end

    assign idle = !ar_active && !dq_valid && !d_active && !ra_busy && !rb_valid && resv == {(BAW+1){1'b0}};
endmodule

`default_nettype wire
