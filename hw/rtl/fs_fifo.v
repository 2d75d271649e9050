// A small first-word-fall-through FIFO in registers: out_data is valid in
// the cycle out_valid is high, and a beat leaves when out_ready is high
// too. DEPTH must be a power of two.
`default_nettype none

module fs_fifo #(
    parameter integer W     = 8,
    parameter integer DEPTH = 4,
    parameter integer AW    = $clog2(DEPTH)
) (
    input  wire         clk,
    input  wire         rst,
    input  wire         in_valid,
    output wire         in_ready,
    input  wire [W-1:0] in_data,
    output wire         out_valid,
    input  wire         out_ready,
    output wire [W-1:0] out_data,
    output wire [AW:0]  count
);
    reg [W-1:0] mem [0:DEPTH-1];
    reg [AW:0]  wp, rp;

    assign count     = wp - rp;
    assign in_ready  = count != DEPTH[AW:0];
    assign out_valid = count != {(AW+1){1'b0}};
    assign out_data  = mem[rp[AW-1:0]];

    always @(posedge clk) begin
        if (rst) begin
            wp <= {(AW+1){1'b0}};
            rp <= {(AW+1){1'b0}};
        end else begin
            if (in_valid && in_ready) begin
                mem[wp[AW-1:0]] <= in_data;
                wp <= wp + 1'b1;
            end
            if (out_valid && out_ready) rp <= rp + 1'b1;
        end
    end
endmodule

`default_nettype wire
