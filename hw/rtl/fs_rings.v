// The three queue rings of BAR0 (spec/registers.md sections 3, 6-9), on-chip
// RAM: the command ring (256 slots of 64 bytes, written by the host one
// 32-bit word at a time, read by the core a slot at a time), the completion
// ring (256 entries of 32 bytes) and the receive ring (64 entries of 128
// bytes), both written by the core an entry at a time and read by the host
// a word at a time. During a soft reset `clr` zeroes the completion and
// receive rings, one entry of each per cycle.
`default_nettype none

module fs_rings (
    input  wire          clk,
    input  wire          clr,
    input  wire [7:0]    clr_idx,
    // Command ring: host writes, core reads.
    input  wire          sq_we,
    input  wire [7:0]    sq_widx,
    input  wire [3:0]    sq_wword,
    input  wire [31:0]   sq_wdata,
    input  wire          sq_re,
    input  wire [7:0]    sq_ridx,
    output wire [511:0]  sq_rdata,
    // Completion ring: core writes, host reads.
    input  wire          cq_we,
    input  wire [7:0]    cq_widx,
    input  wire [255:0]  cq_wdata,
    input  wire          cq_re,
    input  wire [7:0]    cq_ridx,
    output wire [255:0]  cq_rdata,
    // Receive ring: core writes, host reads.
    input  wire          rq_we,
    input  wire [5:0]    rq_widx,
    input  wire [1023:0] rq_wdata,
    input  wire          rq_re,
    input  wire [5:0]    rq_ridx,
    output wire [1023:0] rq_rdata
);
    wire [15:0] sq_lanes = sq_we ? (16'd1 << sq_wword) : 16'd0;

    fs_sdp_ram #(.WIDTH(512), .DEPTH(256), .LANE(32)) sq (
        .clk(clk), .we(sq_lanes), .waddr(sq_widx), .wdata({16{sq_wdata}}),
        .re(sq_re), .raddr(sq_ridx), .rdata(sq_rdata)
    );

    fs_sdp_ram #(.WIDTH(256), .DEPTH(256)) cq (
        .clk(clk), .we(clr || cq_we), .waddr(clr ? clr_idx : cq_widx),
        .wdata(clr ? 256'd0 : cq_wdata),
        .re(cq_re), .raddr(cq_ridx), .rdata(cq_rdata)
    );

    fs_sdp_ram #(.WIDTH(1024), .DEPTH(64)) rq (
        .clk(clk), .we(clr ? clr_idx[7:6] == 2'd0 : rq_we), .waddr(clr ? clr_idx[5:0] : rq_widx),
        .wdata(clr ? 1024'd0 : rq_wdata),
        .re(rq_re), .raddr(rq_ridx), .rdata(rq_rdata)
    );
endmodule

`default_nettype wire
