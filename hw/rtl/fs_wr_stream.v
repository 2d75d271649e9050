// Write engine: writes `len` bytes into board memory at byte address
// `addr` through an AXI4 write port. The input beats carry byte 0 of the run
// at lane `lane` of their first beat (a frame's payload, an atomic's word);
// the engine re-aligns them to the address, sets the write strobes of the
// partial first and last beats and splits bursts at 4 KiB boundaries. Up to
// MAXOUT bursts await their write response; `idle` means every write this
// engine issued has been acknowledged (committed to memory).
`default_nettype none

module fs_wr_stream #(
    parameter integer DW     = 256,
    parameter integer AW     = 40,
    parameter integer IDW    = 1,
    parameter [IDW-1:0] ID   = {IDW{1'b0}},
    parameter integer MAXOUT = 8,
    parameter integer LB     = $clog2(DW / 8)
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            cmd_valid,
    output wire            cmd_ready,
    input  wire [AW-1:0]   cmd_addr,
    input  wire [16:0]     cmd_len,   // 1..65536
    input  wire [LB-1:0]   cmd_lane,
    input  wire            in_valid,
    output wire            in_ready,
    input  wire [DW-1:0]   in_data,
    output wire            idle,
    output wire            idle_now,  // idle from the next cycle: the last write response is here
    output reg             err,       // a write returned an error response
    output wire            m_awvalid,
    input  wire            m_awready,
    output wire [AW-1:0]   m_awaddr,
    output wire [7:0]      m_awlen,
    output wire [IDW-1:0]  m_awid,
    output wire            m_wvalid,
    input  wire            m_wready,
    output wire [DW-1:0]   m_wdata,
    output wire [DW/8-1:0] m_wstrb,
    output wire            m_wlast,
    input  wire            m_bvalid,
    output wire            m_bready,
    input  wire [1:0]      m_bresp
);
    localparam integer B  = DW / 8;
    localparam integer NW = 18 - LB;
    localparam integer PAGE_I = 4096 / B;
    localparam [NW-1:0] PAGE_BEATS = PAGE_I[NW-1:0];
    localparam [NW-1:0] MAX_BURST  = 256;
    localparam [NW-1:0] ONE        = 1;
    localparam integer OW = $clog2(MAXOUT) + 1;

    reg              c_active;
    reg  [AW-1:0]    aw_addr;
    reg  [NW-1:0]    aw_left;
    reg  [OW-1:0]    outstanding;
    reg  [LB-1:0]    a0, e_lane;
    reg  [NW-1:0]    k, n_out;
    reg  [8:0]       w_cnt;

    /* verilator lint_off UNUSEDSIGNAL */
    // Low bits of the beat-count sum are a lane; bresp bit 0 only tells
    // SLVERR from DECERR; the burst-length queue's count is not needed.
    wire [17:0]   out_end = {1'b0, cmd_len} + {{(18-LB){1'b0}}, cmd_addr[LB-1:0]} + (B[17:0] - 18'd1);
    wire [17:0]   end_pos = {1'b0, cmd_len} + {{(18-LB){1'b0}}, cmd_addr[LB-1:0]};
    wire [1:0]    unused_bresp = m_bresp;
    wire [2:0]    unused_wq_count;
    /* verilator lint_on UNUSEDSIGNAL */

    wire [NW-1:0] to_page = PAGE_BEATS - {{(NW-12+LB){1'b0}}, aw_addr[11:LB]};
    wire [NW-1:0] lim1    = aw_left < to_page ? aw_left : to_page;
    wire [NW-1:0] blen    = lim1 > MAX_BURST ? MAX_BURST : lim1;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [NW-1:0] blen_m1 = blen - ONE;   // a burst is at most 256 beats
    /* verilator lint_on UNUSEDSIGNAL */

    wire       ra_busy;
    wire       wq_in_ready, wq_valid;
    wire [8:0] wq_len;
    wire       aw_room = outstanding != MAXOUT[OW-1:0] && wq_in_ready;

    assign cmd_ready = !c_active && !ra_busy;
    assign m_awvalid = c_active && aw_left != {NW{1'b0}} && aw_room;
    assign m_awaddr  = aw_addr;
    assign m_awlen   = blen_m1[7:0];
    assign m_awid    = ID;
    assign m_bready  = 1'b1;

    wire aw_fire = m_awvalid && m_awready;
    wire b_fire  = m_bvalid;

    // Lengths of the bursts whose address has gone, for WLAST.
    fs_fifo #(.W(9), .DEPTH(4)) wq (
        .clk(clk), .rst(rst),
        .in_valid(aw_fire), .in_ready(wq_in_ready), .in_data(blen[8:0]),
        .out_valid(wq_valid), .out_ready(m_wvalid && m_wready && m_wlast), .out_data(wq_len),
        .count(unused_wq_count)
    );

    wire          ra_valid, ra_ready, ra_last;
    wire [DW-1:0] ra_data;
    fs_realign #(.DW(DW)) ra (
        .clk(clk), .rst(rst),
        .start(cmd_valid && cmd_ready), .in_lane(cmd_lane), .out_lane(cmd_addr[LB-1:0]),
        .len(cmd_len), .busy(ra_busy),
        .in_valid(in_valid), .in_ready(in_ready), .in_data(in_data),
        .out_valid(ra_valid), .out_ready(ra_ready), .out_data(ra_data), .out_last(ra_last)
    );

    // Strobes: lanes from a0 in the first beat, below e_lane in the last.
    integer i;
    reg [B-1:0] strb;
    always @* begin
        for (i = 0; i < B; i = i + 1)
            strb[i] = !(k == {NW{1'b0}} && i < a0)
                   && !(k == n_out - ONE && e_lane != {LB{1'b0}} && i >= e_lane);
    end

    assign m_wvalid = ra_valid && wq_valid;
    assign ra_ready = m_wready && wq_valid;
    assign m_wdata  = ra_data;
    assign m_wstrb  = strb;
    assign m_wlast  = w_cnt == wq_len - 9'd1;

    always @(posedge clk) begin
        if (rst) begin
            c_active    <= 1'b0;
            aw_addr     <= {AW{1'b0}};
            aw_left     <= {NW{1'b0}};
            outstanding <= {OW{1'b0}};
            a0 <= {LB{1'b0}};
            e_lane <= {LB{1'b0}};
            k <= {NW{1'b0}};
            n_out <= {NW{1'b0}};
            w_cnt <= 9'd0;
            err <= 1'b0;
        end else begin
            err <= b_fire && m_bresp[1];
            if (cmd_valid && cmd_ready) begin
                c_active <= 1'b1;
                aw_addr  <= {cmd_addr[AW-1:LB], {LB{1'b0}}};
                aw_left  <= out_end[17:LB];
                n_out    <= out_end[17:LB];
                a0       <= cmd_addr[LB-1:0];
                e_lane   <= end_pos[LB-1:0];
                k        <= {NW{1'b0}};
            end else begin
                if (aw_fire) begin
                    aw_addr <= aw_addr + {{(AW-NW-LB){1'b0}}, blen, {LB{1'b0}}};
                    aw_left <= aw_left - blen;
                end
                if (m_wvalid && m_wready) k <= k + ONE;
                if (c_active && aw_left == {NW{1'b0}} && !ra_busy) c_active <= 1'b0;
            end
            if (m_wvalid && m_wready) w_cnt <= m_wlast ? 9'd0 : w_cnt + 9'd1;
            outstanding <= outstanding + {{(OW-1){1'b0}}, aw_fire} - {{(OW-1){1'b0}}, b_fire};
        end
    end

    assign idle     = !c_active && !ra_busy && outstanding == {OW{1'b0}};
    assign idle_now = !c_active && !ra_busy && outstanding == {{(OW-1){1'b0}}, 1'b1} && b_fire;

    wire unused_last = ra_last;
endmodule

`default_nettype wire
