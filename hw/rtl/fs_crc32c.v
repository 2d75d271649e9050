// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) over the first
// `words` 32-bit words of a beat, byte lane 0 first (spec/wire.md
// "Integrity check"). The state is the raw shift register: start from
// 32'hFFFFFFFF and XOR the result with 32'hFFFFFFFF at the end of a frame.
`default_nettype none

module fs_crc32c #(
    parameter integer DW = 256,
    parameter integer WB = $clog2(DW / 32) + 1
) (
    input  wire [31:0]   crc_in,
    input  wire [DW-1:0] data,
    input  wire [WB-1:0] words,
    output reg  [31:0]   crc_out
);
    function [31:0] crc_byte(input [31:0] c, input [7:0] b);
        integer k;
        reg [31:0] x;
        begin
            x = c ^ {24'd0, b};
            for (k = 0; k < 8; k = k + 1)
                x = x[0] ? ((x >> 1) ^ 32'h82F63B78) : (x >> 1);
            crc_byte = x;
        end
    endfunction

    integer w, j;
    reg [31:0] c;
    always @* begin
        c = crc_in;
        for (w = 0; w < DW / 32; w = w + 1)
            if (w < {{(32-WB){1'b0}}, words})
                for (j = 0; j < 4; j = j + 1)
                    c = crc_byte(c, data[32*w + 8*j +: 8]);
        crc_out = c;
    end
endmodule

`default_nettype wire
