// Shares the AXI4 read channels between two masters (the AM sequencer's
// payload reads and the atomic unit's word reads). Address requests are
// granted alternately when both wait; the master's index becomes the top bit
// of ARID, and read data returns to the master that bit names.
`default_nettype none

module fs_axi_rd_arb #(
    parameter integer AW  = 40,
    parameter integer IDW = 1        // ID bits of each master
) (
    input  wire           clk,
    input  wire           rst,
    // Master 0.
    input  wire           a_arvalid,
    output wire           a_arready,
    input  wire [AW-1:0]  a_araddr,
    input  wire [7:0]     a_arlen,
    input  wire [IDW-1:0] a_arid,
    output wire           a_rvalid,
    input  wire           a_rready,
    // Master 1.
    input  wire           b_arvalid,
    output wire           b_arready,
    input  wire [AW-1:0]  b_araddr,
    input  wire [7:0]     b_arlen,
    input  wire [IDW-1:0] b_arid,
    output wire           b_rvalid,
    input  wire           b_rready,
    // Slave side.
    output wire           m_arvalid,
    input  wire           m_arready,
    output wire [AW-1:0]  m_araddr,
    output wire [7:0]     m_arlen,
    output wire [IDW:0]   m_arid,
    input  wire           m_rvalid,
    output wire           m_rready,
    input  wire [IDW:0]   m_rid
);
    reg last_b;   // master 1 had the last grant
    wire pick_b = b_arvalid && (!a_arvalid || !last_b);

    assign m_arvalid = a_arvalid || b_arvalid;
    assign m_araddr  = pick_b ? b_araddr : a_araddr;
    assign m_arlen   = pick_b ? b_arlen : a_arlen;
    assign m_arid    = pick_b ? {1'b1, b_arid} : {1'b0, a_arid};
    assign a_arready = m_arready && !pick_b;
    assign b_arready = m_arready && pick_b;

    wire to_b = m_rid[IDW];
    assign a_rvalid = m_rvalid && !to_b;
    assign b_rvalid = m_rvalid && to_b;
    assign m_rready = to_b ? b_rready : a_rready;

    always @(posedge clk) begin
        if (rst) last_b <= 1'b0;
        else if (m_arvalid && m_arready) last_b <= pick_b;
    end

    wire [IDW-1:0] unused_rid = m_rid[IDW-1:0];
endmodule

`default_nettype wire
