//! The ports of `fshmem_core` for one clock cycle, laid out as the C
//! structures of `hw/sim/fs_model.h` (`fs_in`, `fs_out`).

/// Bytes in one datapath beat (the model is built with `DW = 256`).
pub const BEAT: usize = 32;

/// Values applied to the top's inputs for one cycle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// `strap_window_size`: bytes of DDR behind BAR2.
    pub strap_window_size: u64,
    /// `strap_node_count`: reset value of `NODE_COUNT`.
    pub strap_node_count: u32,
    /// `bar0_wdata`.
    pub bar0_wdata: u32,
    /// `rto_ticks`: first retransmission timeout.
    pub rto_ticks: u32,
    /// `rto_max_ticks`: largest retransmission timeout.
    pub rto_max_ticks: u32,
    /// `peer_timeout_ticks`: silence before a peer is declared dead.
    pub peer_timeout_ticks: u32,
    /// `link_peer`: {port 1, port 0} peer node ids.
    pub link_peer: u32,
    /// `linkN_rx_tkeep`.
    pub rx_keep: [u32; 2],
    /// `strap_node_id`: reset value of `NODE_ID`.
    pub strap_node_id: u16,
    /// `bar0_addr`: BAR0 byte offset.
    pub bar0_addr: u16,
    /// `ack_delay_cycles`.
    pub ack_delay_cycles: u16,
    /// `nack_hold_ticks`.
    pub nack_hold_ticks: u16,
    /// `link_rate`: {port 1, port 0} Gbit/s.
    pub link_rate: u16,
    /// `rst_n`.
    pub rst_n: u8,
    /// `tick_us`.
    pub tick_us: u8,
    /// `bar0_valid`.
    pub bar0_valid: u8,
    /// `bar0_write`.
    pub bar0_write: u8,
    /// `m_axi_awready`.
    pub awready: u8,
    /// `m_axi_wready`.
    pub wready: u8,
    /// `m_axi_bvalid`.
    pub bvalid: u8,
    /// `m_axi_bresp`.
    pub bresp: u8,
    /// `m_axi_bid`.
    pub bid: u8,
    /// `m_axi_arready`.
    pub arready: u8,
    /// `m_axi_rvalid`.
    pub rvalid: u8,
    /// `m_axi_rresp`.
    pub rresp: u8,
    /// `m_axi_rlast`.
    pub rlast: u8,
    /// `m_axi_rid`.
    pub rid: u8,
    /// `linkN_tx_tready`.
    pub tx_ready: [u8; 2],
    /// `linkN_rx_tvalid`.
    pub rx_valid: [u8; 2],
    /// `linkN_rx_tlast`.
    pub rx_last: [u8; 2],
    /// `link_up`: bit per port.
    pub link_up: u8,
    /// `link_present`: bit per port.
    pub link_present: u8,
    /// `m_axi_rdata`, byte lane 0 first.
    pub rdata: [u8; BEAT],
    /// `linkN_rx_tdata`, byte lane 0 first.
    pub rx_data: [[u8; BEAT]; 2],
    /// `kcmd_desc`: a descriptor slot, bits 31:0 first (read while `kcmd_valid`).
    pub kcmd_desc: [u32; 16],
    /// `kcmd_cont`: a chained AM's continuation slot.
    pub kcmd_cont: [u32; 16],
    /// `kerr_info`: `ERR_INFO` of a request the kernel dropped (read while
    /// `kerr_valid`).
    pub kerr_info: u32,
    /// `strap_compute`: a kernel sits on the kernel port.
    pub strap_compute: u8,
    /// `kcmd_valid`.
    pub kcmd_valid: u8,
    /// `kam_ready`.
    pub kam_ready: u8,
    /// `kc_ready`.
    pub kc_ready: u8,
    /// `kerr_valid`: the kernel reports a dropped request this cycle
    /// (`ERR_STATUS.COMPUTE`).
    pub kerr_valid: u8,
}

/// The top's outputs in a cycle, sampled before its clock edge.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outputs {
    /// `m_axi_awaddr`.
    pub awaddr: u64,
    /// `m_axi_araddr`.
    pub araddr: u64,
    /// `bar0_rdata` (valid with `bar0_rvalid`).
    pub bar0_rdata: u32,
    /// `m_axi_wstrb`.
    pub wstrb: u32,
    /// `linkN_tx_tkeep`.
    pub tx_keep: [u32; 2],
    /// `bar0_rvalid`: read data of the previous cycle's request.
    pub bar0_rvalid: u8,
    /// `msi`.
    pub msi: u8,
    /// `busy`: work in progress.
    pub busy: u8,
    /// `armed`: frames wait for their acknowledgement (timers on the tick).
    pub armed: u8,
    /// `m_axi_awvalid`.
    pub awvalid: u8,
    /// `m_axi_awlen`.
    pub awlen: u8,
    /// `m_axi_awid`.
    pub awid: u8,
    /// `m_axi_wvalid`.
    pub wvalid: u8,
    /// `m_axi_wlast`.
    pub wlast: u8,
    /// `m_axi_bready`.
    pub bready: u8,
    /// `m_axi_arvalid`.
    pub arvalid: u8,
    /// `m_axi_arlen`.
    pub arlen: u8,
    /// `m_axi_arid`.
    pub arid: u8,
    /// `m_axi_rready`.
    pub rready: u8,
    /// `linkN_tx_tvalid`.
    pub tx_valid: [u8; 2],
    /// `linkN_tx_tlast`.
    pub tx_last: [u8; 2],
    /// `m_axi_wdata`, byte lane 0 first.
    pub wdata: [u8; BEAT],
    /// `linkN_tx_tdata`, byte lane 0 first.
    pub tx_data: [[u8; BEAT]; 2],
    /// `kam_args`: argument `i` in word `i` (written while `kam_valid`).
    pub kam_args: [u32; 16],
    /// `kc_entry`: bytes 0..25 of a completion entry as words, bits 31:0
    /// first (written while `kc_valid`).
    pub kc_entry: [u32; 7],
    /// `kam_src` (written while `kam_valid`).
    pub kam_src: u16,
    /// `kam_valid`: a request for the kernel.
    pub kam_valid: u8,
    /// `kam_handler`.
    pub kam_handler: u8,
    /// `kam_nargs`.
    pub kam_nargs: u8,
    /// `kcmd_ready`: the descriptor on `kcmd_*` is taken this cycle.
    pub kcmd_ready: u8,
    /// `kc_valid`: a completion for the kernel.
    pub kc_valid: u8,
}
