// fshmem GASNet core: constants shared by the modules of hw/rtl.
// Values come from spec/registers.md (command interface) and spec/wire.md
// (the packet); each group names its section.

`ifndef FS_DEFS_VH
`define FS_DEFS_VH

// spec/registers.md section 7.2: descriptor opcodes.
`define OP_NOP      8'h01
`define OP_FENCE    8'h02
`define OP_PUT      8'h08
`define OP_GET      8'h09
`define OP_AM_CONT  8'h1F
`define OP_AMO      8'h20

// Section 7.3: descriptor flags.
`define F_COMPLETION 8'h01
`define F_FENCE      8'h02
`define F_IOVA       8'h04
`define F_INLINE     8'h08
`define F_CHAIN      8'h10

// Section 8.1: completion status codes.
`define ST_OK         8'd0
`define ST_BADOPCODE  8'd1
`define ST_BADFLAGS   8'd2
`define ST_RESERVED   8'd3
`define ST_BADLENGTH  8'd4
`define ST_BADAMO     8'd5
`define ST_MISALIGNED 8'd6
`define ST_BADARGS    8'd7
`define ST_BADCHAIN   8'd8
`define ST_BADHANDLER 8'd9
`define ST_BADTARGET  8'd10
`define ST_OUTOFRANGE 8'd11
`define ST_UNSUPPORTED 8'd12
`define ST_REMOTE     8'd13
`define ST_TIMEOUT    8'd14
`define ST_ABORTED    8'd16

// spec/wire.md "Packet type": wire type codes.
`define T_SHORT_REQ  8'h01
`define T_MEDIUM_REQ 8'h02
`define T_LONG_REQ   8'h03
`define T_SHORT_REP  8'h11
`define T_MEDIUM_REP 8'h12
`define T_LONG_REP   8'h13
`define T_ACK        8'h20
`define T_NACK       8'h21

// spec/wire.md "Flags".
`define WF_SEQ     8'h01
`define WF_ACK     8'h02
`define WF_ACK_NOW 8'h04

// gasnet-core types.rs: system handler indices the core serves.
`define H_PUT       8'd1
`define H_GET       8'd2
`define H_GET_REPLY 8'd3
`define H_AMO       8'd4
`define H_AMO_REPLY 8'd5
`define H_ACK       8'd6
`define H_PING      8'd10

// gasnet-core engine/layout.rs: status codes carried in an ACK.
`define RS_OK         32'd0
`define RS_OUTOFRANGE 32'd1
`define RS_MISALIGNED 32'd2
`define RS_MALFORMED  32'd4

// Limits (types.rs): Medium and Long payloads.
`define MAX_MEDIUM 17'd4096
`define MAX_LONG   17'd65536

// A packet job: what the AM sequencer (fs_builder) turns into one or more
// frames. Produced by the scheduler (requests) and the dispatcher
// (responses of the system handlers).
`define JW          961
`define J_WTYPE     7:0      // wire type code
`define J_HANDLER   15:8
`define J_DST       31:16
`define J_NARGS     36:32
`define J_REQ       37       // 1: may wait at the receiver (loopback request queue)
`define J_SRC       39:38    // payload from: 0 none, 1 board memory, 2 inline bytes
`define J_LEN       56:40    // payload bytes, 0..65536
`define J_NOTE      63:57    // {notify, generation, command slot[4:0]}
`define J_OFFSET    127:64   // Long: target segment offset
`define J_MADDR     191:128  // board memory byte address of the payload
`define J_INLINE    447:192
`define J_ARGS      959:448  // argument i at bits [448+32i +: 32]
`define J_HOLD      960      // a response sent only when released (its writes committed)

`define SRC_NONE   2'd0
`define SRC_MEM    2'd1
`define SRC_INLINE 2'd2

// A completion record: the fields of a completion entry (section 8) but
// the phase bit, which the completion writer adds.
`define CW          208
`define C_TAG       31:0
`define C_STATUS    39:32
`define C_OPCODE    47:40
`define C_TARGET    63:48
`define C_VALUE     127:64
`define C_BYTES     159:128
`define C_DETAIL    191:160
`define C_INDEX     207:192

// A frame record: the parsed header of a frame waiting in a receive or
// loopback buffer, kept beside its beats for the dispatcher.
`define FIW         673
`define FI_TYPE     7:0
`define FI_HANDLER  15:8
`define FI_SRC      31:16
`define FI_NARGS    36:32
`define FI_PLEN     53:37    // payload bytes in this frame
`define FI_FOFF     70:54    // frag_offset
`define FI_TOTAL    87:71    // total_len
`define FI_BEATS    96:88    // beats the frame occupies in its buffer
`define FI_OFFSET   160:97
`define FI_ARGS     672:161  // argument i at bits [161+32i +: 32]

`endif
