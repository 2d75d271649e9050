// Grants the transmit buffer's write side to one AM sequencer at a time,
// for all the fragments of one job (so the fragments of an AM take
// consecutive sequence numbers), starting only when the buffer has room
// for a largest frame: the response sequencer first, then the request
// sequencer. The granted sequencer's frame beats pass through to
// fs_link_tx; it checks the room for each later fragment itself.
`default_nettype none
`include "fs_defs.vh"

module fs_tx_arb #(
    parameter integer DW = 256
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            space,      // the buffer takes a largest frame
    // Requester 0 (responses) and 1 (requests).
    input  wire [1:0]      req,
    output wire [1:0]      gnt,
    input  wire [1:0]      fo_valid,
    input  wire [2*DW-1:0] fo_data,
    input  wire [1:0]      fo_last,
    input  wire [1:0]      fo_jlast,
    input  wire [1:0]      fo_loop,
    input  wire [31:0]     fo_dst,
    input  wire [35:0]     fo_len,
    input  wire [17:0]     fo_beats,
    input  wire [33:0]     fo_plen,
    input  wire [1:0]      fo_ct,
    input  wire [1:0]      fo_hold,
    // To the buffer.
    output wire            o_valid,
    output wire [DW-1:0]   o_data,
    output wire            o_last,
    output wire [15:0]     o_dst,
    output wire [17:0]     o_len,
    output wire [8:0]      o_beats,
    output wire [16:0]     o_plen,
    output wire            o_ct,
    output wire            o_hold
);
    reg       busy, owner;
    wire      pick = req[0] ? 1'b0 : 1'b1;
    wire      take = !busy && space && (req[0] || req[1]);
    wire      own  = busy ? owner : pick;
    wire      on   = busy || take;

    assign gnt = on ? (own ? 2'b10 : 2'b01) : 2'b00;
    // A granted sequencer's loopback frames never reach here (it holds the
    // grant only for a frame to the buffer).
    assign o_valid = on && fo_valid[own] && !fo_loop[own];
    assign o_data  = fo_data[own*DW +: DW];
    assign o_last  = fo_last[own];
    assign o_dst   = fo_dst[own*16 +: 16];
    assign o_len   = fo_len[own*18 +: 18];
    assign o_beats = fo_beats[own*9 +: 9];
    assign o_plen  = fo_plen[own*17 +: 17];
    assign o_ct    = fo_ct[own];
    assign o_hold  = fo_hold[own];

    always @(posedge clk) begin
        if (rst) begin
            busy  <= 1'b0;
            owner <= 1'b0;
        end else begin
            if (take) begin
                busy  <= 1'b1;
                owner <= pick;
            end
            if (o_valid && o_last && fo_jlast[own]) busy <= 1'b0;
        end
    end
endmodule

`default_nettype wire
