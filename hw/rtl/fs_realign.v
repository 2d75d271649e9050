// Moves a run of `len` bytes from one byte-lane alignment to another: the
// input beats carry byte 0 of the run at lane `in_lane` of their first beat,
// the output beats carry it at lane `out_lane`. Input bytes outside the run
// must be zero if the output is to be zero outside it (the readers mask
// them; the writers use strobes instead). One beat per cycle in steady state.
//
// With d = in_lane - out_lane, output beat k is bytes d .. d+B-1 of the
// input stream, i.e. the concatenation of two consecutive input beats
// shifted right by (d mod B) bytes; when d < 0 a zero beat is put in front.
`default_nettype none

module fs_realign #(
    parameter integer DW = 256,
    parameter integer LB = $clog2(DW / 8)  // bits of a lane index
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          start,     // begin a run (only when !busy)
    input  wire [LB-1:0] in_lane,
    input  wire [LB-1:0] out_lane,
    input  wire [16:0]   len,       // 1..65536 bytes
    output wire          busy,
    input  wire          in_valid,
    output wire          in_ready,
    input  wire [DW-1:0] in_data,
    output wire          out_valid,
    input  wire          out_ready,
    output wire [DW-1:0] out_data,
    output wire          out_last
);
    localparam integer B  = DW / 8;
    localparam integer NW = 18 - LB;  // bits of a beat count (65536 + B bytes)

    reg [DW-1:0] cur;
    reg          have_cur;
    reg [NW-1:0] in_left, out_left;
    reg [LB-1:0] sh;

    /* verilator lint_off UNUSEDSIGNAL */
    // The low LB bits of these sums are lanes; only the beat counts matter.
    wire [17:0] in_end  = {1'b0, len} + {{(18-LB){1'b0}}, in_lane} + (B[17:0] - 18'd1);
    wire [17:0] out_end = {1'b0, len} + {{(18-LB){1'b0}}, out_lane} + (B[17:0] - 18'd1);
    /* verilator lint_on UNUSEDSIGNAL */

    wire          more     = in_left != {NW{1'b0}};
    wire [DW-1:0] next     = more ? in_data : {DW{1'b0}};
    wire [2*DW-1:0] both   = {next, cur};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [2*DW-1:0] moved  = both >> ({{(32-LB){1'b0}}, sh} * 8);  // low half used
    /* verilator lint_on UNUSEDSIGNAL */
    wire          can_emit = have_cur && out_left != {NW{1'b0}} && (!more || in_valid);

    assign busy      = out_left != {NW{1'b0}};
    assign out_valid = can_emit;
    assign out_data  = moved[DW-1:0];
    assign out_last  = out_left == {{(NW-1){1'b0}}, 1'b1};
    assign in_ready  = more && (!have_cur || (out_ready && out_left != {NW{1'b0}}));

    always @(posedge clk) begin
        if (rst) begin
            have_cur <= 1'b0;
            in_left  <= {NW{1'b0}};
            out_left <= {NW{1'b0}};
            cur      <= {DW{1'b0}};
            sh       <= {LB{1'b0}};
        end else if (start) begin
            cur      <= {DW{1'b0}};
            have_cur <= in_lane < out_lane;
            sh       <= in_lane - out_lane;
            in_left  <= in_end[17:LB];
            out_left <= out_end[17:LB];
        end else begin
            if (in_valid && in_ready) begin
                cur      <= in_data;
                have_cur <= 1'b1;
                in_left  <= in_left - {{(NW-1){1'b0}}, 1'b1};
            end else if (out_valid && out_ready) begin
                cur <= {DW{1'b0}};
            end
            if (out_valid && out_ready) out_left <= out_left - {{(NW-1){1'b0}}, 1'b1};
        end
    end
endmodule

`default_nettype wire
