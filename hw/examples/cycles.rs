//! Cycle figures of the RTL core, from simulation, projected at a clock
//! rate beside FSHMEM's measured figures (FPL 2023, Stratix 10: put
//! 0.35 us, get 0.59 us, 3813 MB/s).
//!
//! Two boards joined by a link of `--link` cycles each way (a frame's first
//! beat arrives that long after its last beat left: store-and-forward, so
//! conservative), board memory answering reads after `--mem-read` cycles
//! and acknowledging writes after `--mem-write`, a `--mhz` clock. Each
//! latency is split into the core's own cycles, the wire (frame beats and
//! link) and the memory, and the link latency at which the projected put
//! and get would equal FSHMEM's is given. Spans are core to core: the
//! host's PCIe doorbell store and completion load are not in them.
//!
//! ```sh
//! cargo run --release -p fshmem-hw --features verilator --example cycles -- \
//!     --mhz 250 --link 25 --mem-read 30 --mem-write 20
//! ```

use fshmem_hw::sim::Net;
use fshmem_hw::{BoardConfig, Event};
use gasnet_core::cmd::{self, Common, Descriptor, Inline, Local, PutSource, irq, regs};
use gasnet_core::{AmoOp, AmoWidth};

const FSHMEM_PUT_NS: f64 = 350.0;
const FSHMEM_GET_NS: f64 = 590.0;
const FSHMEM_MBS: f64 = 3813.0;

/// Cycle figures of the RTL core, projected at a clock.
#[derive(clap::Parser)]
struct Opts {
    /// Core clock (MHz).
    #[arg(long, default_value_t = 250)]
    mhz: u32,
    /// Link latency each way (cycles, last beat out to first beat in).
    #[arg(long, default_value_t = 25)]
    link: u64,
    /// Board memory read latency (cycles, address to first data beat).
    #[arg(long, default_value_t = 30)]
    mem_read: u32,
    /// Board memory write latency (cycles, last data beat to response).
    #[arg(long, default_value_t = 20)]
    mem_write: u32,
}

fn common(tag: u32) -> Common {
    Common {
        tag,
        completion: true,
        fence_before: false,
    }
}

type Trace = Vec<(u64, Event)>;

/// Submits `d` on board 0 and runs until both boards are quiet; returns
/// the doorbell's cycle and both boards' events, board 1's on board 0's
/// clock. The completion shows as the MSI of the completion ring, one cycle
/// after the entry is written; spans end at the entry ([`written`]),
/// which is what a polling host waits for.
fn run(net: &mut Net, d: &Descriptor) -> (u64, Trace, Trace) {
    for h in net.hosts.iter_mut() {
        h.board.write32(regs::IRQ_STATUS, 0x7);
        h.board.set_trace(true);
    }
    let h = &mut net.hosts[0];
    for s in cmd::encode_slots(d).as_slots() {
        h.write_slot(s);
    }
    let bell = h.board.cycles();
    h.doorbell();
    // From here on both boards are clocked together (a host's register
    // access clocks its own board only).
    let skew = net.hosts[1].board.cycles() as i64 - net.hosts[0].board.cycles() as i64;
    net.settle(10_000_000);
    let t0 = net.hosts[0].board.take_trace();
    let t1 = net.hosts[1]
        .board
        .take_trace()
        .into_iter()
        .map(|(c, e)| ((c as i64 - skew) as u64, e))
        .collect();
    while net.hosts[0].poll_cq().is_some() {}
    (bell, t0, t1)
}

fn at(t: &Trace, after: u64, pred: impl Fn(&Event) -> bool) -> u64 {
    t.iter()
        .find(|(c, e)| *c >= after && pred(e))
        .map(|(c, _)| *c)
        .expect("event")
}

/// The cycle a completion entry was written: the completion ring's MSI
/// (the first after `after`) comes one cycle after it.
fn written(t: &Trace, after: u64) -> u64 {
    at(t, after, |e| *e == Event::Msi) - 1
}

fn tx(ty: u8) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::TxStart(_, t) if *t == ty)
}

fn rx(ty: u8) -> impl Fn(&Event) -> bool {
    move |e| matches!(e, Event::RxStart(_, t) if *t == ty)
}

/// One operation's round trip, split.
struct Split {
    total: u64,
    wire: u64,
    memory: u64,
}

fn main() {
    let o = <Opts as clap::Parser>::parse();
    let mhz = o.mhz as f64;
    let cfg = BoardConfig {
        mem_latency: o.mem_read,
        mem_write_latency: o.mem_write,
        cycles_per_tick: Some(o.mhz),
        ..BoardConfig::default()
    };
    let mut net = Net::new(2, cfg, o.link);
    for h in net.hosts.iter_mut() {
        h.board.write32(regs::IRQ_MASK, !irq::CQ & 0x7);
    }
    let ns = |c: u64| c as f64 * 1000.0 / mhz;
    let (mr, mw) = (o.mem_read as u64, o.mem_write as u64);

    // Put of 8 bytes (inline): complete when the target has written them.
    let put = Descriptor::Put {
        common: common(1),
        target: 1,
        remote: 0x100,
        source: PutSource::Inline(Inline::new(&[7; 8]).unwrap()),
    };
    let (b, t0, t1) = run(&mut net, &put);
    let req_flit = at(&t0, b, tx(0x03));
    let arrive = at(&t1, 0, rx(0x03));
    let write = at(&t1, arrive, |e| *e == Event::MemWrite);
    let resp_flit = at(&t1, arrive, tx(0x11));
    let back = at(&t0, resp_flit, rx(0x11));
    let done = written(&t0, b);
    let put_split = Split {
        total: done - b,
        wire: (arrive - req_flit) + (back - resp_flit),
        memory: mw,
    };
    let put_rows = [
        ("doorbell -> first flit of the PUT frame", req_flit - b),
        ("PUT arrival -> payload written to memory", write - arrive),
        ("PUT arrival -> first flit of its ACK", resp_flit - arrive),
        ("ACK arrival -> completion written", done - back),
    ];

    // Get of 8 bytes into the local segment.
    let get = Descriptor::Get {
        common: common(2),
        target: 1,
        remote: 0x100,
        local: Local::Segment(0x200),
        len: 8,
    };
    let (b, g0, g1) = run(&mut net, &get);
    let gflit = at(&g0, b, tx(0x01));
    let garrive = at(&g1, 0, rx(0x01));
    let gresp = at(&g1, garrive, tx(0x12).or_long());
    let gback = at(&g0, gresp, rx(0x12).or_long_rx());
    let gdone = written(&g0, b);
    let gread = at(&g1, garrive, |e| matches!(e, Event::MemRead(_)));
    let gwrite = at(&g0, gback, |e| *e == Event::MemWrite);
    let get_rows = [
        ("doorbell -> first flit of the GET frame", gflit - b),
        ("GET arrival -> memory read issued", gread - garrive),
        ("GET arrival -> first flit of its reply", gresp - garrive),
        ("reply arrival -> payload written to memory", gwrite - gback),
        ("reply arrival -> completion written", gdone - gback),
    ];
    let get_split = Split {
        total: gdone - b,
        wire: (garrive - gflit) + (gback - gresp),
        memory: mr + mw,
    };

    // A 64-bit fetch-add.
    let amo = Descriptor::Amo {
        common: common(3),
        target: 1,
        op: AmoOp::FetchAdd,
        width: AmoWidth::W64,
        remote: 0x300,
        operand: 1,
        compare: 0,
    };
    let (b, a0, a1) = run(&mut net, &amo);
    let aflit = at(&a0, b, tx(0x01));
    let aarrive = at(&a1, 0, rx(0x01));
    let aresp = at(&a1, aarrive, tx(0x11));
    let aback = at(&a0, aresp, rx(0x11));
    let adone = written(&a0, b);
    let aread = at(&a1, aarrive, |e| matches!(e, Event::MemRead(_)));
    let awrite = at(&a1, aread, |e| *e == Event::MemWrite);
    let amo_rows = [
        ("doorbell -> first flit of the AMO frame", aflit - b),
        ("AMO arrival -> memory read issued", aread - aarrive),
        ("AMO arrival -> new value written", awrite - aarrive),
        ("AMO arrival -> first flit of its reply", aresp - aarrive),
        ("reply arrival -> completion written", adone - aback),
    ];
    let amo_split = Split {
        total: adone - b,
        wire: (aarrive - aflit) + (aback - aresp),
        memory: mr + mw,
    };

    // Sustained: one put of 768 KiB from the local segment.
    const BIG: u32 = 768 << 10;
    let big = Descriptor::Put {
        common: common(4),
        target: 1,
        remote: 0,
        source: PutSource::Local {
            addr: Local::Segment(0),
            len: BIG,
        },
    };
    let (b, s0, _) = run(&mut net, &big);
    let start = at(&s0, b, tx(0x03));
    let end = s0
        .iter()
        .rev()
        .find(|(_, e)| matches!(e, Event::TxEnd(_)))
        .map(|(c, _)| *c)
        .expect("end");
    let sdone = written(&s0, b);
    let rtx = net.hosts[0].board.read64(regs::CNT_RETRANSMITS);
    let link_bpc = BIG as f64 / (end - start + 1) as f64;
    let e2e_bpc = BIG as f64 / (sdone - b) as f64;

    println!(
        "fshmem RTL core, simulated: {} MHz, link {} cycles ({:.0} ns) each way, memory read {} / write {} cycles",
        o.mhz,
        o.link,
        ns(o.link),
        o.mem_read,
        o.mem_write
    );
    println!();
    for (title, rows) in [
        ("put 8 B, step by step", &put_rows[..]),
        ("get 8 B, step by step", &get_rows[..]),
        ("fetch-add 64-bit, step by step", &amo_rows[..]),
    ] {
        println!("{title:<44} {:>7} {:>9}", "cycles", "ns");
        for (name, c) in rows {
            println!("{name:<44} {c:>7} {:>9.1}", ns(*c));
        }
        println!();
    }
    println!(
        "{:<20} {:>7} {:>7} {:>7} {:>7} {:>9} {:>12} {:>14}",
        "round trip", "total", "core", "wire", "memory", "ns", "vs FSHMEM", "break-even link"
    );
    for (name, sp, fshmem) in [
        ("put 8 B", &put_split, Some(FSHMEM_PUT_NS)),
        ("get 8 B", &get_split, Some(FSHMEM_GET_NS)),
        ("fetch-add 64-bit", &amo_split, None),
    ] {
        let core = sp.total - sp.wire - sp.memory;
        let (vs, be) = match fshmem {
            Some(f) => {
                let fixed = ns(sp.total) - 2.0 * ns(o.link);
                (
                    format!("{:.2}x", ns(sp.total) / f),
                    format!("{:.0} ns", (f - fixed) / 2.0),
                )
            }
            None => ("-".into(), "-".into()),
        };
        println!(
            "{name:<20} {:>7} {core:>7} {:>7} {:>7} {:>9.1} {vs:>12} {be:>14}",
            sp.total,
            sp.wire,
            sp.memory,
            ns(sp.total)
        );
    }
    println!();
    println!(
        "sustained put of {} KiB: {:.1} payload bytes/cycle on the link = {:.0} MB/s ({:.2}x FSHMEM's {:.0} MB/s); \
         doorbell to completion {:.1} bytes/cycle; {} retransmissions",
        BIG >> 10,
        link_bpc,
        link_bpc * mhz,
        link_bpc * mhz / FSHMEM_MBS,
        FSHMEM_MBS,
        e2e_bpc,
        rtx
    );
}

trait OrLong {
    fn or_long(self) -> Box<dyn Fn(&Event) -> bool>;
    fn or_long_rx(self) -> Box<dyn Fn(&Event) -> bool>;
}

impl<F: Fn(&Event) -> bool + 'static> OrLong for F {
    /// Also matches a Long reply leaving (a get's reply is Medium or Long).
    fn or_long(self) -> Box<dyn Fn(&Event) -> bool> {
        Box::new(move |e| self(e) || matches!(e, Event::TxStart(_, 0x13)))
    }
    /// Also matches a Long reply arriving.
    fn or_long_rx(self) -> Box<dyn Fn(&Event) -> bool> {
        Box::new(move |e| self(e) || matches!(e, Event::RxStart(_, 0x13)))
    }
}
