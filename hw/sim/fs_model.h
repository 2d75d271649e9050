/* C ABI of the Verilated fshmem core (hw/rtl/fshmem_core.v, DW = 256).
 * One call of fs_model_step is one clock cycle: the inputs are applied, the
 * combinational outputs of that cycle are sampled into *out, then the
 * rising edge is taken. A handshake (valid && ready) seen in the sampled
 * outputs and the applied inputs therefore completed at that edge. The
 * layout of both structures is checked from Rust with fs_model_layout. */
#ifndef FS_MODEL_H
#define FS_MODEL_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FS_BEAT 32

typedef struct {
    uint64_t strap_window_size;
    uint32_t strap_node_count;
    uint32_t bar0_wdata;
    uint32_t rto_ticks;
    uint32_t rto_max_ticks;
    uint32_t peer_timeout_ticks;
    uint32_t link_peer;
    uint32_t rx_keep[2];
    uint16_t strap_node_id;
    uint16_t bar0_addr;
    uint16_t ack_delay_cycles;
    uint16_t nack_hold_ticks;
    uint16_t link_rate;
    uint8_t rst_n;
    uint8_t tick_us;
    uint8_t bar0_valid;
    uint8_t bar0_write;
    uint8_t awready;
    uint8_t wready;
    uint8_t bvalid;
    uint8_t bresp;
    uint8_t bid;
    uint8_t arready;
    uint8_t rvalid;
    uint8_t rresp;
    uint8_t rlast;
    uint8_t rid;
    uint8_t tx_ready[2];
    uint8_t rx_valid[2];
    uint8_t rx_last[2];
    uint8_t link_up;
    uint8_t link_present;
    uint8_t rdata[FS_BEAT];
    uint8_t rx_data[2][FS_BEAT];
    /* The kernel port: descriptor words (bits 31:0 first), read only while
     * kcmd_valid. */
    uint32_t kcmd_desc[16];
    uint32_t kcmd_cont[16];
    /* The kernel's error strobe: ERR_INFO of a request it dropped. */
    uint32_t kerr_info;
    uint8_t strap_compute;
    uint8_t kcmd_valid;
    uint8_t kam_ready;
    uint8_t kc_ready;
    uint8_t kerr_valid;
} fs_in;

typedef struct {
    uint64_t awaddr;
    uint64_t araddr;
    uint32_t bar0_rdata;
    uint32_t wstrb;
    uint32_t tx_keep[2];
    uint8_t bar0_rvalid;
    uint8_t msi;
    uint8_t busy;
    uint8_t armed;
    uint8_t awvalid;
    uint8_t awlen;
    uint8_t awid;
    uint8_t wvalid;
    uint8_t wlast;
    uint8_t bready;
    uint8_t arvalid;
    uint8_t arlen;
    uint8_t arid;
    uint8_t rready;
    uint8_t tx_valid[2];
    uint8_t tx_last[2];
    uint8_t wdata[FS_BEAT];
    uint8_t tx_data[2][FS_BEAT];
    /* The kernel port: kam_args is written only while kam_valid, kc_entry
     * only while kc_valid. */
    uint32_t kam_args[16];
    uint32_t kc_entry[7];
    uint16_t kam_src;
    uint8_t kam_valid;
    uint8_t kam_handler;
    uint8_t kam_nargs;
    uint8_t kcmd_ready;
    uint8_t kc_valid;
} fs_out;

typedef struct fs_model fs_model;

/* A new model, clock low, inputs zero. NULL if allocation failed. */
fs_model *fs_model_new(void);
void fs_model_free(fs_model *m);
/* One clock cycle (see above). */
void fs_model_step(fs_model *m, const fs_in *in, fs_out *out);
/* sizeof(fs_in), sizeof(fs_out) and the model's beat width in bytes. */
void fs_model_layout(uint32_t *in_size, uint32_t *out_size, uint32_t *beat);

#ifdef __cplusplus
}
#endif
#endif
