// A FIFO of data beats in block RAM whose writer may take back what it
// wrote: beats written since the last commit are invisible to the reader
// and a rollback discards them. The link receivers write a frame while
// checking it and commit it only when its CRC and sequence number are good.
// The read side is first-word-fall-through over the RAM's one cycle of
// latency: a beat is offered in the cycle the RAM returns it (a committed
// frame's first beat two cycles after its commit), and a two-entry output
// queue holds what the reader has not taken, so one beat per cycle flows.
`default_nettype none

module fs_frame_buf #(
    parameter integer W     = 256,
    parameter integer DEPTH = 256,
    parameter integer AW    = $clog2(DEPTH)
) (
    input  wire         clk,
    input  wire         rst,
    // Writer.
    input  wire         wr_en,
    input  wire [W-1:0] wr_data,
    input  wire         commit,    // make everything written so far visible
    input  wire         rollback,  // discard what was written since the last commit
    output wire [AW:0]  free,      // beats that can still be written
    // Reader.
    output wire         rd_valid,
    input  wire         rd_ready,
    output wire [W-1:0] rd_data
);
    reg  [AW:0] wp, cp, rp;
    reg  [W-1:0] q0, q1;
    reg  [1:0]  occ;
    reg         inflight;
    wire [W-1:0] ram_q;

    // Beats that may be read: the committed ones, and in the cycle of a
    // commit those it commits that were written before it (returned in the
    // next cycle, when they are committed).
    wire [AW:0] avail = (commit ? wp : cp) - rp;
    wire        pop   = rd_valid && rd_ready;
    wire [2:0]  busy  = {1'b0, occ} + {2'b00, inflight} - {2'b00, pop};
    wire        issue = avail != {(AW+1){1'b0}} && busy < 3'd2;

    assign free     = DEPTH[AW:0] - (wp - rp);
    assign rd_valid = occ != 2'd0 || inflight;
    assign rd_data  = occ != 2'd0 ? q0 : ram_q;

    fs_sdp_ram #(.WIDTH(W), .DEPTH(DEPTH)) ram (
        .clk(clk), .we(wr_en), .waddr(wp[AW-1:0]), .wdata(wr_data),
        .re(issue), .raddr(rp[AW-1:0]), .rdata(ram_q)
    );

    always @(posedge clk) begin
        if (rst) begin
            wp <= {(AW+1){1'b0}};
            cp <= {(AW+1){1'b0}};
            rp <= {(AW+1){1'b0}};
            occ <= 2'd0;
            inflight <= 1'b0;
        end else begin
            if (rollback) wp <= cp;
            else if (wr_en) wp <= wp + 1'b1;
            if (commit) cp <= wr_en ? wp + 1'b1 : wp;
            if (issue) rp <= rp + 1'b1;
            inflight <= issue;
            // The queue is q0, q1 (occ of them) then the beat the RAM
            // returns (inflight); the reader takes the first.
            case ({pop, inflight})
                2'b10: begin q0 <= q1; occ <= occ - 2'd1; end
                2'b01: begin
                    if (occ == 2'd0) q0 <= ram_q; else q1 <= ram_q;
                    occ <= occ + 2'd1;
                end
                2'b11: if (occ != 2'd0) begin   // (occ 0: the reader took the RAM's beat itself)
                    if (occ == 2'd1) q0 <= ram_q;
                    else begin q0 <= q1; q1 <= ram_q; end
                end
                default: ;
            endcase
        end
    end
endmodule

`default_nettype wire
