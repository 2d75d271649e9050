// AM sequencer: turns packet jobs into spec/wire.md frames. A job's payload
// is cut into fragments of at most FRAG bytes (each a complete packet with
// its frag_offset, spec/wire.md "Fragmentation"); each frame is the 40-byte
// header, the arguments (big-endian, padded to 8 bytes), then the payload
// read from board memory (or taken inline from the job) padded to 4 bytes.
// The link layer stamps flags, seq and ack and appends the CRC.
//
// The core has two: one for the scheduler's requests and one for the
// system handlers' responses, so that a response never waits behind a
// request (the two classes of traffic must not share a queue, or a node
// sending to itself can wait on itself). Before a frame starts, its
// destination must have room for a whole frame: the loopback queue of this
// sequencer's class when the frame is addressed to this node, else the
// transmit buffer, which fs_tx_arb grants to one sequencer for all the
// fragments of a job (fragments of one AM take consecutive sequence
// numbers, spec/wire.md "Fragmentation"). So a frame never stops half-way
// for lack of space; it may only wait for its payload from memory, which
// is read ahead.
`default_nettype none
`include "fs_defs.vh"

module fs_builder #(
    parameter integer DW   = 256,
    parameter integer AW   = 40,
    parameter integer IDW  = 1,
    parameter [IDW-1:0] ID = {IDW{1'b0}},
    parameter integer FRAG = 4096,        // largest payload in one frame (multiple of 8)
    parameter integer LB   = $clog2(DW / 8)
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [15:0]     node_id,
    // Jobs.
    input  wire            q_valid,
    output wire            q_ready,
    input  wire [`JW-1:0]  q_data,
    // AM local completion.
    output reg             n_valid,
    input  wire            n_ready,
    output reg  [6:0]      n_note,
    // Room at the destinations.
    output wire            tx_req,      // a job's frames for the transmit buffer are ready
    input  wire            tx_gnt,      // ... and may be written (held to the job's last beat)
    input  wire            space_tx,    // the transmit buffer has room for a frame
    input  wire            space_lb,    // the loopback queue has room for a frame
    // Frames out.
    output wire            fo_valid,
    output wire [DW-1:0]   fo_data,
    output wire            fo_last,
    output wire            fo_jlast,    // the frame is the job's last fragment
    output wire            fo_loop,
    output wire [15:0]     fo_dst,
    output wire [17:0]     fo_len,     // bytes, without the CRC
    output wire [8:0]      fo_beats,
    output wire [16:0]     fo_plen,
    output wire [`FIW-1:0] fo_fi,
    output wire            fo_ct,       // the frame's beats come one a cycle (no payload from memory)
    output wire            fo_hold,     // the frame waits for a release (fs_link_tx)
    output wire            idle,
    output wire            rd_done,     // a job's payload has been read from memory in full
    output wire            rd_err,
    // Board memory reads (payloads).
    output wire            m_arvalid,
    input  wire            m_arready,
    output wire [AW-1:0]   m_araddr,
    output wire [7:0]      m_arlen,
    output wire [IDW-1:0]  m_arid,
    input  wire            m_rvalid,
    output wire            m_rready,
    input  wire [DW-1:0]   m_rdata,
    input  wire [1:0]      m_rresp
);
    localparam integer B  = DW / 8;
    localparam integer HB = 1024 / DW;     // beats of the 128-byte header area
    localparam [16:0] FRAG17 = FRAG[16:0];

    localparam [1:0] S_IDLE = 2'd0, S_FRAG = 2'd1, S_EMIT = 2'd2, S_NOTE = 2'd3;
    reg [1:0]      st;
    reg [`JW-1:0]  job;
    reg [16:0]     foff;       // offset of the current fragment
    reg [16:0]     rd_off;     // payload bytes whose read has been requested
    reg [8:0]      k;          // beat of the current frame
    reg            inl_beat;   // inline payload: which of its (at most two) beats

    wire [7:0]  j_wtype = job[`J_WTYPE];
    wire [4:0]  j_nargs = job[`J_NARGS];
    wire [16:0] j_len   = job[`J_LEN];
    wire [1:0]  j_src   = job[`J_SRC];
    wire [15:0] j_dst   = job[`J_DST];

    // Fragment geometry.
    wire [16:0] left    = j_len - foff;
    wire [16:0] n       = left > FRAG17 ? FRAG17 : left;
    wire [7:0]  p_off   = 8'd40 + {1'b0, j_nargs + {4'd0, j_nargs[0]}, 2'b00};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [17:0] n4      = {1'b0, n} + 18'd3;              // payload rounded up to 4
    wire [17:0] f_len   = {10'd0, p_off} + {n4[17:2], 2'b00};
    wire [17:0] f_end   = f_len + (B[17:0] - 18'd1);      // for the beat count
    /* verilator lint_on UNUSEDSIGNAL */
    wire [8:0]  beats   = f_end[LB +: 9];
    wire [LB-1:0] lane  = p_off[LB-1:0];
    wire [7:0]  pb8     = p_off >> LB;
    wire [8:0]  pb      = {1'b0, pb8};
    wire        last_frag = foff + n == j_len;
    wire        loop    = j_dst == node_id;
    wire        room    = loop ? space_lb : (tx_gnt && space_tx);
    // A job taken from the queue starts its first frame in the same cycle
    // when its destination has room.
    wire        in_loop = q_data[`J_DST] == node_id;
    wire        in_room = in_loop ? space_lb : (tx_gnt && space_tx);

    // Header area: bytes 0..127 (header, arguments, padding), big-endian fields.
    function [31:0] be(input [31:0] v);
        be = {v[7:0], v[15:8], v[23:16], v[31:24]};
    endfunction
    integer a;
    reg [1023:0] hv;
    always @* begin
        hv = 1024'd0;
        hv[7:0]     = 8'd1;                // version
        hv[15:8]    = j_wtype;
        hv[31:24]   = job[`J_HANDLER];
        hv[32 +: 32] = be({node_id, j_dst});
        hv[64 +: 8] = {3'd0, j_nargs};
        hv[96 +: 32] = be({15'd0, n});
        hv[192 +: 32] = be({15'd0, foff});
        hv[224 +: 32] = be({15'd0, j_len});
        hv[256 +: 32] = be(job[127:96]);   // offset, high word first
        hv[288 +: 32] = be(job[95:64]);
        for (a = 0; a < 16; a = a + 1)
            if (a < j_nargs) hv[320 + 32*a +: 32] = be(job[448 + 32*a +: 32]);
    end

    // Payload stream: board memory through the read engine, or inline bytes.
    wire          rd_cmd_ready, rd_valid, rd_last, rd_idle;
    wire [DW-1:0] rd_data;
    wire [16:0]   rd_left = j_len - rd_off;
    wire [16:0]   rd_n    = rd_left > FRAG17 ? FRAG17 : rd_left;
    wire          rd_cmd  = st != S_IDLE && st != S_NOTE && j_src == `SRC_MEM && rd_off != j_len;
    wire [AW-1:0] rd_addr = job[128 +: AW] + {{(AW-17){1'b0}}, rd_off};

    /* verilator lint_off UNUSEDSIGNAL */
    wire [2*DW-1:0] inl_wide = {{(2*DW-256){1'b0}}, job[`J_INLINE]} << ({{(32-LB){1'b0}}, lane} * 8);
    wire [`JW-1:0]  unused_job = job;   // the note and address fields are read elsewhere
    /* verilator lint_on UNUSEDSIGNAL */
    wire [DW-1:0] inl_data = inl_beat ? inl_wide[2*DW-1:DW] : inl_wide[DW-1:0];

    wire          pl_need  = k >= pb && n != 17'd0;
    wire          pl_valid = j_src == `SRC_MEM ? rd_valid : 1'b1;
    wire [DW-1:0] pl_data  = !pl_need ? {DW{1'b0}} : (j_src == `SRC_MEM ? rd_data : inl_data);
    wire [DW-1:0] hv_beat  = k < HB[8:0] ? hv[k[$clog2(HB)-1:0]*DW +: DW] : {DW{1'b0}};
    wire          emit     = st == S_EMIT && (!pl_need || pl_valid);

    fs_rd_stream #(.DW(DW), .AW(AW), .IDW(IDW), .ID(ID)) rd (
        .clk(clk), .rst(rst),
        .cmd_valid(rd_cmd), .cmd_ready(rd_cmd_ready), .cmd_addr(rd_addr), .cmd_len(rd_n),
        .cmd_lane(lane),
        .out_valid(rd_valid), .out_ready(emit && pl_need && j_src == `SRC_MEM),
        .out_data(rd_data), .out_last(rd_last), .idle(rd_idle), .err(rd_err),
        .m_arvalid(m_arvalid), .m_arready(m_arready), .m_araddr(m_araddr), .m_arlen(m_arlen),
        .m_arid(m_arid), .m_rvalid(m_rvalid), .m_rready(m_rready), .m_rdata(m_rdata),
        .m_rresp(m_rresp)
    );
    wire unused_rd_last = rd_last;

    assign q_ready  = st == S_IDLE;
    assign tx_req   = ((st == S_FRAG || st == S_EMIT) && !loop) || (st == S_IDLE && q_valid && !in_loop);
    assign fo_jlast = last_frag;
    assign fo_valid = emit;
    assign fo_data  = hv_beat | pl_data;
    assign fo_last  = emit && k == beats - 9'd1;
    assign fo_loop  = loop;
    assign rd_done  = emit && k == beats - 9'd1 && last_frag && j_src == `SRC_MEM && j_len != 17'd0;
    assign fo_dst   = j_dst;
    assign fo_len   = f_len;
    assign fo_beats = beats;
    assign fo_plen  = n;
    assign fo_ct    = j_src != `SRC_MEM || n == 17'd0;
    assign fo_hold  = job[`J_HOLD];
    assign idle     = st == S_IDLE && !q_valid && rd_idle;

    reg [`FIW-1:0] fi;
    always @* begin
        fi = {`FIW{1'b0}};
        fi[`FI_TYPE]    = j_wtype;
        fi[`FI_HANDLER] = job[`J_HANDLER];
        fi[`FI_SRC]     = node_id;
        fi[`FI_NARGS]   = j_nargs;
        fi[`FI_PLEN]    = n;
        fi[`FI_FOFF]    = foff;
        fi[`FI_TOTAL]   = j_len;
        fi[`FI_BEATS]   = beats;
        fi[`FI_OFFSET]  = job[`J_OFFSET];
        fi[`FI_ARGS]    = job[`J_ARGS];
    end
    assign fo_fi = fi;

    always @(posedge clk) begin
        if (rst) begin
            st <= S_IDLE;
            job <= {`JW{1'b0}};
            foff <= 17'd0;
            rd_off <= 17'd0;
            k <= 9'd0;
            inl_beat <= 1'b0;
            n_valid <= 1'b0;
            n_note <= 7'd0;
        end else begin
            if (rd_cmd && rd_cmd_ready) rd_off <= rd_off + rd_n;
            case (st)
                S_IDLE: begin
                    if (q_valid) begin
                        job    <= q_data;
                        foff   <= 17'd0;
                        rd_off <= 17'd0;
                        k      <= 9'd0;
                        inl_beat <= 1'b0;
                        st     <= in_room ? S_EMIT : S_FRAG;
                    end
                end
                S_FRAG: if (room) begin
                    k <= 9'd0;
                    inl_beat <= 1'b0;
                    st <= S_EMIT;
                end
                S_EMIT: if (emit) begin
                    k <= k + 9'd1;
                    if (pl_need) inl_beat <= 1'b1;
                    if (k == beats - 9'd1) begin
                        if (!last_frag) begin
                            foff <= foff + n;
                            st <= S_FRAG;
                        end else if (job[63]) begin
                            n_valid <= 1'b1;
                            n_note  <= job[`J_NOTE];
                            st <= S_NOTE;
                        end else begin
                            st <= S_IDLE;
                        end
                    end
                end
                default: if (n_ready) begin
                    n_valid <= 1'b0;
                    st <= S_IDLE;
                end
            endcase
        end
    end
endmodule

`default_nettype wire
