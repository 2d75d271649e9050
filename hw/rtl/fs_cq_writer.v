// Completion writer (spec/registers.md sections 6.2 and 8): turns completion
// records into 32-byte entries at CQ_TAIL with the producer phase bit, which
// starts at 1 and flips each time the tail wraps. It never writes into a
// full ring ((CQ_TAIL + 1) mod 256 == CQ_HEAD): records wait, and the
// scheduler stalls behind them (STATUS.CQ_STALL). The whole entry is written
// in one RAM cycle, so the host never sees its phase byte before the rest.
`default_nettype none
`include "fs_defs.vh"

module fs_cq_writer (
    input  wire           clk,
    input  wire           rst,
    input  wire           in_valid,
    output wire           in_ready,
    input  wire [`CW-1:0] in_data,
    input  wire [7:0]     cq_head,
    output reg  [7:0]     cq_tail,
    output wire           cq_we,
    output wire [7:0]     cq_widx,
    output wire [255:0]   cq_wdata,
    output wire           ev_cq,
    output wire           stall
);
    reg            phase;
    wire           q_valid;
    wire [`CW-1:0] q;
    wire           full = cq_tail + 8'd1 == cq_head;
    // A record goes straight to the ring when nothing waits before it.
    wire           bypass = in_valid && !q_valid && !full;
    wire           fifo_in_ready;

    fs_fifo #(.W(`CW), .DEPTH(4)) fifo (
        .clk(clk), .rst(rst),
        .in_valid(in_valid && !bypass), .in_ready(fifo_in_ready), .in_data(in_data),
        .out_valid(q_valid), .out_ready(!full), .out_data(q), .count(unused_count)
    );
    wire [2:0] unused_count;

    assign in_ready = fifo_in_ready;   // empty whenever a record can bypass it
    assign cq_we    = (q_valid || bypass) && !full;
    assign cq_widx  = cq_tail;
    assign cq_wdata = {7'd0, phase, 40'd0, q_valid ? q : in_data};
    assign ev_cq    = cq_we;
    assign stall    = (q_valid || in_valid) && full;

    always @(posedge clk) begin
        if (rst) begin
            cq_tail <= 8'd0;
            phase   <= 1'b1;
        end else if (cq_we) begin
            cq_tail <= cq_tail + 8'd1;
            if (cq_tail == 8'd255) phase <= ~phase;
        end
    end
endmodule

`default_nettype wire
