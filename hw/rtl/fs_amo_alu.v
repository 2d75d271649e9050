// The atomic unit's arithmetic: the new value of a word holding `old` after
// AmoOp `op` (spec/registers.md section 7.7; gasnet-core/src/amo.rs
// AmoOp::apply), masked to the width. Arithmetic wraps at the width.
`default_nettype none

module fs_amo_alu (
    input  wire [3:0]  op,
    input  wire        w64,       // 1: 64-bit word, 0: 32-bit word
    input  wire [63:0] old,
    input  wire [63:0] operand,
    input  wire [63:0] compare,
    output wire [63:0] new_value,
    output wire        fetches    // the requester gets the old value back
);
    wire [63:0] mask = w64 ? 64'hFFFF_FFFF_FFFF_FFFF : 64'h0000_0000_FFFF_FFFF;
    wire [63:0] o = old & mask;
    wire [63:0] a = operand & mask;
    wire [63:0] c = compare & mask;
    reg  [63:0] r;
    always @* begin
        case (op)
            4'd0:          r = o;                   // Fetch
            4'd1, 4'd2:    r = a;                   // Set, Swap
            4'd3:          r = (o == c) ? a : o;    // CompareSwap
            4'd4, 4'd8:    r = o + a;               // FetchAdd, Add
            4'd5, 4'd9:    r = o & a;               // FetchAnd, And
            4'd6, 4'd10:   r = o | a;               // FetchOr, Or
            4'd7, 4'd11:   r = o ^ a;               // FetchXor, Xor
            default:       r = o;
        endcase
    end
    assign new_value = r & mask;
    assign fetches   = !(op == 4'd1 || op >= 4'd8);
endmodule

`default_nettype wire
