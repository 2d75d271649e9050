// Command descriptor decoder (spec/registers.md sections 7 and 7.8), purely
// combinational. It checks a descriptor's head slot (and the continuation of
// a chained AM) in exactly the order of the reference decoder
// (gasnet-core/src/cmd/desc.rs, decode_chain): opcode, flags, the kind's
// fields in byte order, reserved bytes, so a descriptor with several faults
// is reported with the same status and detail. Multi-byte fields are little
// endian: byte i of a slot is bits [8i+7:8i].
`default_nettype none
`include "fs_defs.vh"

module fs_desc_decode (
    input  wire [511:0] head,
    input  wire [511:0] cont,      // the next slot; looked at only for CHAIN
    output wire         chained,   // the descriptor occupies two slots
    output reg          bad,
    output reg  [7:0]   status,
    output reg  [31:0]  detail,
    // Fields of a well-formed descriptor.
    output wire [7:0]   opcode,
    output wire [7:0]   flags,
    output wire [15:0]  target,
    output wire [31:0]  tag,
    output wire [31:0]  len,
    output wire [63:0]  local_addr,
    output wire [63:0]  remote,
    output wire [255:0] inline_data,
    output wire [7:0]   handler,
    output wire [4:0]   nargs,
    output wire [511:0] args,
    output wire [3:0]   amo_op,
    output wire [3:0]   amo_width,
    output wire [63:0]  operand,
    output wire [63:0]  compare
);
    function [7:0] hb(input integer i);   // head byte i
        hb = head[8*i +: 8];
    endfunction

    // One bit per byte of each slot: the byte is not zero.
    reg [63:0] nzh, nzc;
    integer b;
    always @* begin
        for (b = 0; b < 64; b = b + 1) begin
            nzh[b] = head[8*b +: 8] != 8'd0;
            nzc[b] = cont[8*b +: 8] != 8'd0;
        end
    end

    // First non-zero byte within [from, to) of a slot's non-zero map:
    // {found, offset}.
    function [7:0] first_nz(input [63:0] nz, input integer from, input integer to);
        integer i;
        begin
            first_nz = 8'h00;
            for (i = 63; i >= 0; i = i - 1)
                if (i >= from && i < to && nz[i]) first_nz = {1'b1, i[6:0]};
        end
    endfunction

    wire [7:0] op = head[7:0];
    wire [7:0] fl = head[15:8];
    assign opcode      = op;
    assign flags       = fl;
    assign target      = head[16 +: 16];
    assign tag         = head[32 +: 32];
    assign len         = head[96 +: 32];
    assign local_addr  = head[128 +: 64];
    assign remote      = head[192 +: 64];
    assign inline_data = head[256 +: 256];
    assign handler     = head[64 +: 8];
    assign nargs       = head[72 +: 5];
    assign args        = {cont[511:256], head[511:256]};
    assign amo_op      = head[67:64];
    assign amo_width   = head[75:72];
    assign operand     = head[256 +: 64];
    assign compare     = head[320 +: 64];

    wire is_am  = op == 8'h10 || op == 8'h11 || op == 8'h12 || op == 8'h18 || op == 8'h19 || op == 8'h1A;
    wire am_short = op == 8'h10 || op == 8'h18;
    wire am_medium = op == 8'h11 || op == 8'h19;
    assign chained = is_am && fl[4];

    reg  [7:0] allowed;
    reg        known;
    always @* begin
        known = 1'b1;
        case (op)
            `OP_NOP, `OP_FENCE, `OP_AMO: allowed = 8'h03;
            `OP_PUT: allowed = 8'h0F;
            `OP_GET: allowed = 8'h07;
            default: begin
                allowed = am_short ? 8'h13 : 8'h17;
                known = is_am;
            end
        endcase
    end

    wire [7:0]  hb8   = hb(8);
    wire [7:0]  hb9   = hb(9);
    wire [7:0]  wmask_hi = hb9 == 8'd4 ? 8'hFF : 8'h00;   // 32-bit ops: upper half must be 0
    wire [31:0] in_head = (hb9 > 8'd8) ? 32'd8 : {24'd0, hb9};
    wire [31:0] rest    = {24'd0, hb9} - 32'd8;

    // The reference's zero(b, from, to, base) checks, as status/detail.
    reg [7:0] z;
    always @* begin
        bad = 1'b1;
        status = `ST_OK;
        detail = 32'd0;
        z = 8'd0;
        if (op == `OP_AM_CONT) begin
            status = `ST_BADOPCODE; detail = {24'd0, `OP_AM_CONT};
        end else if (!known) begin
            status = `ST_BADOPCODE; detail = {24'd0, op};
        end else if ((fl & ~allowed) != 8'd0) begin
            status = `ST_BADFLAGS; detail = {24'd0, fl & ~allowed};
        end else if (op == `OP_NOP || op == `OP_FENCE) begin
            z = first_nz(nzh, 2, 4);
            if (!z[7]) z = first_nz(nzh, 8, 64);
            if (z[7]) begin status = `ST_RESERVED; detail = {25'd0, z[6:0]}; end
            else bad = 1'b0;
        end else if (op == `OP_PUT || op == `OP_GET) begin
            z = first_nz(nzh, 8, 12);
            if (z[7]) begin
                status = `ST_RESERVED; detail = {25'd0, z[6:0]};
            end else if (fl[3]) begin
                if (fl[2]) begin
                    status = `ST_BADFLAGS; detail = {24'd0, `F_IOVA};
                end else if (len > 32'd32) begin
                    status = `ST_BADLENGTH; detail = len;
                end else begin
                    z = first_nz(nzh, 16, 24);
                    if (!z[7]) z = first_nz(nzh, 32 + len, 64);
                    if (z[7]) begin status = `ST_RESERVED; detail = {25'd0, z[6:0]}; end
                    else bad = 1'b0;
                end
            end else if (len > 32'h4000_0000) begin
                status = `ST_BADLENGTH; detail = len;
            end else begin
                z = first_nz(nzh, 32, 64);
                if (z[7]) begin status = `ST_RESERVED; detail = {25'd0, z[6:0]}; end
                else bad = 1'b0;
            end
        end else if (op == `OP_AMO) begin
            if (hb8 > 8'd11) begin
                status = `ST_BADAMO; detail = {24'd0, hb8};
            end else if (hb9 != 8'd4 && hb9 != 8'd8) begin
                status = `ST_BADAMO; detail = {24'd0, hb9};
            end else begin
                z = first_nz(nzh, 10, 24);
                if (z[7]) begin
                    status = `ST_RESERVED; detail = {25'd0, z[6:0]};
                end else if ((hb9 == 8'd4 && remote[1:0] != 2'd0) || (hb9 == 8'd8 && remote[2:0] != 3'd0)) begin
                    status = `ST_MISALIGNED; detail = remote[31:0];
                end else begin
                    if (hb8 == 8'd0) z = first_nz(nzh, 32, 40);
                    if (!z[7] && hb8 != 8'd3) z = first_nz(nzh, 40, 48);
                    if (!z[7]) z = first_nz(nzh, 48, 64);
                    if (z[7]) begin
                        status = `ST_RESERVED; detail = {25'd0, z[6:0]};
                    end else if ((operand[63:32] & {4{wmask_hi}}) != 32'd0) begin
                        status = `ST_BADAMO; detail = 32'd32;
                    end else if ((compare[63:32] & {4{wmask_hi}}) != 32'd0) begin
                        status = `ST_BADAMO; detail = 32'd40;
                    end else bad = 1'b0;
                end
            end
        end else begin
            // Active message.
            if (hb8 == 8'd0) begin
                status = `ST_BADHANDLER; detail = 32'd0;
            end else if (hb9 > 8'd16) begin
                status = `ST_BADARGS; detail = {24'd0, hb9};
            end else if ((hb9 > 8'd8) != fl[4]) begin
                status = `ST_BADCHAIN; detail = {24'd0, hb9};
            end else begin
                z = first_nz(nzh, 10, 12);
                if (z[7]) begin
                    status = `ST_RESERVED; detail = {25'd0, z[6:0]};
                end else if (am_short && len != 32'd0) begin
                    status = `ST_BADLENGTH; detail = len;
                end else if (!am_short && len > (am_medium ? 32'd4096 : 32'd65536)) begin
                    status = `ST_BADLENGTH; detail = len;
                end else begin
                    if (am_short) z = first_nz(nzh, 16, 32);
                    else if (am_medium) z = first_nz(nzh, 24, 32);
                    if (!z[7]) z = first_nz(nzh, 32 + 4 * in_head, 64);
                    if (z[7]) begin
                        status = `ST_RESERVED; detail = {25'd0, z[6:0]};
                    end else if (!fl[4]) begin
                        bad = 1'b0;
                    end else if (cont[7:0] != `OP_AM_CONT) begin
                        status = `ST_BADCHAIN; detail = {24'd0, cont[7:0]};
                    end else if (cont[15:8] != 8'd0) begin
                        status = `ST_BADFLAGS; detail = {24'd0, cont[15:8]};
                    end else begin
                        z = first_nz(nzc, 2, 4);
                        if (z[7]) begin
                            status = `ST_RESERVED; detail = 32'd64 + {25'd0, z[6:0]};
                        end else if (cont[32 +: 32] != tag) begin
                            status = `ST_BADCHAIN; detail = cont[32 +: 32];
                        end else begin
                            z = first_nz(nzc, 8, 32);
                            if (!z[7]) z = first_nz(nzc, 32 + 4 * rest, 64);
                            if (z[7]) begin
                                status = `ST_RESERVED; detail = 32'd64 + {25'd0, z[6:0]};
                            end else bad = 1'b0;
                        end
                    end
                end
            end
        end
    end
endmodule

`default_nettype wire
