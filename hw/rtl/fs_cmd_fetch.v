// Command queue fetch (spec/registers.md section 6.1): reads the slot at
// SQ_HEAD once a doorbell covers it (and, for a chained AM, its
// continuation once a doorbell covers both), copies them into an output
// register for the decoder and moves SQ_HEAD past them. Fetching stops
// while the core is disabled; a descriptor already copied stays until the
// scheduler takes it.
`default_nettype none

module fs_cmd_fetch (
    input  wire         clk,
    input  wire         rst,
    input  wire         enabled,
    input  wire [7:0]   sq_tail,
    input  wire [7:0]   sq_tail_nx,   // sq_tail after this cycle's doorbell, if any
    output reg  [7:0]   sq_head,
    // Command ring read port.
    output wire         sq_re,
    output wire [7:0]   sq_ridx,
    input  wire [511:0] sq_rdata,
    // To the decoder and scheduler.
    output reg          d_valid,
    input  wire         d_ready,
    output reg  [511:0] d_head,
    output reg  [511:0] d_cont,
    output reg  [7:0]   d_index
);
    localparam [2:0] S_IDLE = 3'd0, S_HEAD = 3'd1, S_CHECK = 3'd2, S_CONT = 3'd3, S_FULL = 3'd4;
    reg [2:0]   state;
    reg [511:0] head_q;

    // An AM opcode with CHAIN set occupies two slots (section 7.6).
    function chained(input [7:0] op, input chain_flag);
        chained = (op == 8'h10 || op == 8'h11 || op == 8'h12 ||
                   op == 8'h18 || op == 8'h19 || op == 8'h1A) && chain_flag;
    endfunction

    wire [7:0] avail    = sq_tail - sq_head;
    wire       chain_am = chained(head_q[7:0], head_q[12]);

    // The head slot is read in the cycle of the doorbell that covers it.
    assign sq_re   = (state == S_IDLE && enabled && sq_tail_nx != sq_head)
                  || (state == S_CHECK && chain_am && avail >= 8'd2);
    assign sq_ridx = state == S_IDLE ? sq_head : sq_head + 8'd1;

    always @(posedge clk) begin
        if (rst) begin
            state   <= S_IDLE;
            sq_head <= 8'd0;
            d_valid <= 1'b0;
            d_head  <= 512'd0;
            d_cont  <= 512'd0;
            d_index <= 8'd0;
            head_q  <= 512'd0;
        end else begin
            if (d_valid && d_ready) d_valid <= 1'b0;
            case (state)
                S_IDLE: if (sq_re && !d_valid) state <= S_HEAD;
                S_HEAD: begin
                    head_q <= sq_rdata;
                    if (!chained(sq_rdata[7:0], sq_rdata[12])) begin
                        d_head  <= sq_rdata;
                        d_cont  <= 512'd0;
                        d_index <= sq_head;
                        d_valid <= 1'b1;
                        sq_head <= sq_head + 8'd1;
                        state   <= S_FULL;
                    end else begin
                        state <= S_CHECK;
                    end
                end
                S_CHECK: if (avail >= 8'd2) state <= S_CONT;
                S_CONT: begin
                    d_head  <= head_q;
                    d_cont  <= sq_rdata;
                    d_index <= sq_head;
                    d_valid <= 1'b1;
                    sq_head <= sq_head + 8'd2;
                    state   <= S_FULL;
                end
                default: if (!d_valid || d_ready) state <= S_IDLE;
            endcase
        end
    end
endmodule

`default_nettype wire
