// A loopback queue: frames this node addresses to itself, written by the AM
// sequencer with their parsed header, read by the dispatcher like a link
// receiver's frames. They never reach a link, carry no sequence number and
// no CRC. The node has two: requests (which may wait at the dispatcher) and
// the system handlers' responses (which never wait), so a response can
// always get through.
`default_nettype none
`include "fs_defs.vh"

module fs_loop #(
    parameter integer DW    = 256,
    parameter integer BUF   = 256,
    parameter integer FRAME = 133,     // beats of the largest frame
    parameter integer FIDEPTH = 8
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            wr_en,
    input  wire [DW-1:0]   wr_data,
    input  wire            wr_last,
    input  wire [`FIW-1:0] wr_fi,
    output wire            space,
    output wire            fi_valid,
    input  wire            fi_ready,
    output wire [`FIW-1:0] fi_data,
    output wire            bt_valid,
    input  wire            bt_ready,
    output wire [DW-1:0]   bt_data
);
    localparam integer BAW = $clog2(BUF);
    localparam integer FB  = $clog2(FIDEPTH);
    wire [BAW:0] free;
    wire [FB:0]  count;
    assign space = free >= FRAME[BAW:0] && count < FIDEPTH[FB:0];

    fs_fifo #(.W(`FIW), .DEPTH(FIDEPTH)) fiq (
        .clk(clk), .rst(rst),
        .in_valid(wr_en && wr_last), .in_ready(unused_ready), .in_data(wr_fi),
        .out_valid(fi_valid), .out_ready(fi_ready), .out_data(fi_data), .count(count)
    );
    wire unused_ready;

    fs_frame_buf #(.W(DW), .DEPTH(BUF)) fb (
        .clk(clk), .rst(rst),
        .wr_en(wr_en), .wr_data(wr_data), .commit(wr_en && wr_last), .rollback(1'b0),
        .free(free),
        .rd_valid(bt_valid), .rd_ready(bt_ready), .rd_data(bt_data)
    );
endmodule

`default_nettype wire
