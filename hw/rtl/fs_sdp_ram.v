// Simple dual-port RAM: one write port with per-lane write enables and one
// read port whose output is registered (one cycle of read latency), the
// shape every FPGA block RAM offers. A read of the address written in the
// same cycle returns the old contents. The synthesis script keeps this
// module as a black box so that vendor flows map it onto block RAM.
`default_nettype none

module fs_sdp_ram #(
    parameter integer WIDTH = 256,
    parameter integer DEPTH = 256,
    // Write-enable granularity in bits (WIDTH for a single enable).
    parameter integer LANE  = WIDTH,
    parameter integer AW    = $clog2(DEPTH)
) (
    input  wire                  clk,
    input  wire [WIDTH/LANE-1:0] we,
    input  wire [AW-1:0]         waddr,
    input  wire [WIDTH-1:0]      wdata,
    input  wire                  re,
    input  wire [AW-1:0]         raddr,
    output reg  [WIDTH-1:0]      rdata
);
    reg [WIDTH-1:0] mem [0:DEPTH-1];
    integer i;

    always @(posedge clk) begin
        for (i = 0; i < WIDTH / LANE; i = i + 1)
            if (we[i]) mem[waddr][i*LANE +: LANE] <= wdata[i*LANE +: LANE];
        if (re) rdata <= mem[raddr];
    end
endmodule

`default_nettype wire
