//! The whole API on a singleton job (no launcher: rank 0 of 1) over the smp
//! conduit. The runtime initializes once per process, so this file holds a
//! single test that walks through every call.

use shmem::{Cmp, ShmemError, SignalOp};

fn heap_exhaustion(sh: &shmem::Shmem) {
    let size = sh.config().symmetric_size;
    let e = sh.malloc::<u8>(size + 1).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            ShmemError::Alloc {
                pe: 0,
                call: "shmem_malloc",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(msg.contains(&(size + 1).to_string()), "{msg}");
    assert!(msg.contains("SHMEM_SYMMETRIC_SIZE"), "{msg}");
    let e = sh.malloc::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(e, ShmemError::SizeOverflow { .. }), "{e:?}");
    let e = sh.align::<u8>(48, 1).unwrap_err();
    assert!(e.to_string().contains("48"), "{e}");
}

fn rma(sh: &shmem::Shmem) {
    let x = sh.calloc::<u32>(8).unwrap();
    assert_eq!(x.to_vec(), &[0; 8]);
    x.put(2, &[5, 6, 7], 0).unwrap();
    assert_eq!(x.to_vec(), &[0, 0, 5, 6, 7, 0, 0, 0]);
    let mut back = [0u32; 4];
    x.get(1, &mut back, 0).unwrap();
    assert_eq!(back, [0, 5, 6, 7]);
    x.p(7, 99, 0).unwrap();
    assert_eq!(x.g(7, 0).unwrap(), 99);
    x.write(0, 11);
    assert_eq!(x.g(0, 0).unwrap(), 11);

    // Errors name the PE, the call and the value.
    let e = x.put(0, &[1], 7).unwrap_err();
    assert_eq!(
        e.to_string(),
        "PE 0: shmem_put: target PE 7 out of range (job has 1 PEs)"
    );
    let e = x.put(6, &[1, 2, 3], 0).unwrap_err();
    assert_eq!(
        e.to_string(),
        "PE 0: shmem_put: elements 6..9 out of bounds (object has 8 elements)"
    );
    assert!(matches!(
        x.g(8, 0),
        Err(ShmemError::OutOfBounds {
            call: "shmem_g",
            ..
        })
    ));
    assert!(x.get(usize::MAX, &mut back, 0).is_err());

    // Arrays of Pod and floats.
    let m = sh.calloc::<[f64; 3]>(2).unwrap();
    m.p(1, [1.0, 2.0, 3.0], 0).unwrap();
    assert_eq!(m.g(1, 0).unwrap(), [1.0, 2.0, 3.0]);
    assert_eq!(m.read(0), [0.0; 3]);

    // Direct pointers.
    let p = x.ptr(0).expect("smp maps segments");
    assert_eq!(p, x.local_ptr());
    // SAFETY: p points at element 0 of this PE's live copy of x.
    assert_eq!(unsafe { p.read() }, 11);
    assert!(x.ptr(1).is_none());
    sh.quiet().unwrap();
    sh.fence().unwrap();
}

fn nbi(sh: &shmem::Shmem) {
    let x = sh.calloc::<u64>(16).unwrap();
    let src: Vec<u64> = (100..116).collect();
    let mut got = vec![0u64; 8];
    let r = sh.nbi(|s| {
        s.put(&x, 0, &src, 0)?;
        s.fence()?;
        s.quiet()?;
        s.get(&x, 4, &mut got, 0)?;
        Ok::<_, ShmemError>(7)
    });
    assert_eq!(r.unwrap(), 7);
    assert_eq!(got, (104..112).collect::<Vec<u64>>());
    let e = sh.nbi(|s| s.put(&x, 10, &src, 0)).unwrap_err();
    assert!(e.to_string().contains("shmem_put_nbi"), "{e}");
}

fn atomics(sh: &shmem::Shmem) {
    macro_rules! int_ops {
        ($t:ty) => {{
            let a = sh.calloc::<$t>(2).unwrap();
            a.atomic_set(1, 10, 0).unwrap();
            assert_eq!(a.atomic_fetch(1, 0).unwrap(), 10);
            assert_eq!(a.atomic_swap(1, 20, 0).unwrap(), 10);
            assert_eq!(a.atomic_compare_swap(1, 19, 5, 0).unwrap(), 20);
            assert_eq!(a.atomic_compare_swap(1, 20, 5, 0).unwrap(), 20);
            assert_eq!(a.atomic_fetch_add(1, 3, 0).unwrap(), 5);
            a.atomic_add(1, 2, 0).unwrap();
            assert_eq!(a.atomic_fetch_inc(1, 0).unwrap(), 10);
            a.atomic_inc(1, 0).unwrap();
            assert_eq!(a.atomic_fetch(1, 0).unwrap(), 12);
            assert_eq!(a.atomic_fetch_and(1, 0b0110, 0).unwrap(), 12);
            assert_eq!(a.atomic_fetch_or(1, 0b1001, 0).unwrap(), 0b0100);
            assert_eq!(a.atomic_fetch_xor(1, 0b0011, 0).unwrap(), 0b1101);
            a.atomic_and(1, 0b1100, 0).unwrap();
            a.atomic_or(1, 0b0001, 0).unwrap();
            a.atomic_xor(1, 0b1000, 0).unwrap();
            assert_eq!(a.atomic_fetch(1, 0).unwrap(), 0b0101);
            // Element 0 untouched, wrapping arithmetic.
            assert_eq!(a.read(0), 0);
            a.atomic_set(0, <$t>::MAX, 0).unwrap();
            a.atomic_inc(0, 0).unwrap();
            assert_eq!(a.read(0), <$t>::MIN);
            assert!(a.atomic_fetch(2, 0).is_err());
            assert!(a.atomic_inc(0, 1).is_err());
        }};
    }
    int_ops!(u32);
    int_ops!(i32);
    int_ops!(u64);
    int_ops!(i64);
    int_ops!(usize);

    let f = sh.calloc::<f32>(1).unwrap();
    f.atomic_set(0, -1.25, 0).unwrap();
    assert_eq!(f.atomic_fetch(0, 0).unwrap(), -1.25);
    assert_eq!(f.atomic_swap(0, 3.5, 0).unwrap(), -1.25);
    assert_eq!(f.read(0), 3.5);
    let d = sh.calloc::<f64>(1).unwrap();
    d.atomic_set(0, 1e300, 0).unwrap();
    assert_eq!(d.atomic_swap(0, -0.5, 0).unwrap(), 1e300);
    assert_eq!(d.atomic_fetch(0, 0).unwrap(), -0.5);
}

fn waits_and_signals(sh: &shmem::Shmem) {
    let w = sh.calloc::<i64>(1).unwrap();
    w.p(0, -5, 0).unwrap();
    let expect = [
        (Cmp::Eq, -5, true),
        (Cmp::Eq, 5, false),
        (Cmp::Ne, 0, true),
        (Cmp::Ne, -5, false),
        (Cmp::Gt, -6, true),
        (Cmp::Gt, -5, false),
        (Cmp::Ge, -5, true),
        (Cmp::Ge, -4, false),
        (Cmp::Lt, -4, true),
        (Cmp::Lt, -5, false),
        (Cmp::Le, -5, true),
        (Cmp::Le, -6, false),
    ];
    for (cmp, v, holds) in expect {
        assert_eq!(w.test(0, cmp, v).unwrap(), holds, "{cmp:?} {v}");
        if holds {
            assert_eq!(w.wait_until(0, cmp, v).unwrap(), -5);
        }
    }
    let u = sh.calloc::<u32>(1).unwrap();
    u.p(0, u32::MAX, 0).unwrap();
    // Unsigned comparison: MAX is greater than 1.
    assert!(u.test(0, Cmp::Gt, 1).unwrap());

    // A wait released by another thread's atomic.
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(20));
            w.atomic_set(0, 42, 0).unwrap();
        });
        assert_eq!(w.wait_until(0, Cmp::Eq, 42).unwrap(), 42);
    });

    let data = sh.calloc::<u8>(16).unwrap();
    let sig = sh.calloc::<u64>(2).unwrap();
    assert_eq!(sig.signal_fetch(1).unwrap(), 0);
    data.put_signal(3, b"abc", &sig, 1, SignalOp::Set, 7, 0)
        .unwrap();
    assert_eq!(sig.signal_wait_until(1, Cmp::Eq, 7).unwrap(), 7);
    assert_eq!(data.read_range(3..6), b"abc");
    data.put_signal(0, b"z", &sig, 1, SignalOp::Add, 5, 0)
        .unwrap();
    assert_eq!(sig.signal_fetch(1).unwrap(), 12);
    assert!(sig.signal_fetch(2).is_err());
    let e = data
        .put_signal(0, b"z", &sig, 2, SignalOp::Add, 5, 0)
        .unwrap_err();
    assert!(e.to_string().contains("shmem_put_signal"), "{e}");
}

fn allocation(sh: &shmem::Shmem) {
    let a = sh.malloc::<u8>(10).unwrap();
    let off = a.segment_offset();
    drop(a);
    // Reuse after free.
    let b = sh.malloc::<u8>(10).unwrap();
    assert_eq!(b.segment_offset(), off);
    b.free().unwrap();

    let al = sh.align::<u8>(4096, 3).unwrap();
    assert_eq!(al.local_ptr() as usize % 4096, 0);
    assert_eq!(al.segment_offset() % 4096, 0);

    let mut v = sh.calloc::<u64>(4).unwrap();
    v.copy_from(0, &[1, 2, 3, 4]);
    let blocker = sh.malloc::<u64>(1).unwrap();
    let before = v.segment_offset();
    v.realloc(1000).unwrap();
    assert_ne!(v.segment_offset(), before, "grew past a live block: moved");
    assert_eq!(v.len(), 1000);
    assert_eq!(v.read_range(..4), &[1, 2, 3, 4]);
    v.p(999, 5, 0).unwrap();
    let at = v.segment_offset();
    v.realloc(2).unwrap();
    assert_eq!(v.segment_offset(), at, "shrinking stays in place");
    assert_eq!(v.to_vec(), &[1, 2]);
    let e = v.realloc(usize::MAX / 16).unwrap_err();
    assert!(
        matches!(
            e,
            ShmemError::Alloc {
                call: "shmem_realloc",
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(v.to_vec(), &[1, 2], "failed realloc keeps the object");
    drop(blocker);

    let empty = sh.malloc::<u32>(0).unwrap();
    assert!(empty.is_empty());
    assert!(empty.put(0, &[], 0).is_ok());
    assert!(empty.p(0, 1, 0).is_err());
}

#[test]
fn api_on_one_pe() {
    assert!(matches!(
        shmem::my_pe(),
        Err(ShmemError::NotInitialized { .. })
    ));
    let config = shmem::Config {
        symmetric_size: 4 << 20,
        ..Default::default()
    };
    let sh = shmem::init_with(config).unwrap();
    assert_eq!(shmem::init().unwrap_err(), ShmemError::AlreadyInitialized);
    assert_eq!((sh.my_pe(), sh.n_pes()), (0, 1));
    assert_eq!((shmem::my_pe().unwrap(), shmem::n_pes().unwrap()), (0, 1));

    heap_exhaustion(&sh);
    rma(&sh);
    nbi(&sh);
    atomics(&sh);
    waits_and_signals(&sh);
    allocation(&sh);

    sh.barrier_all().unwrap();
    sh.sync_all().unwrap();
    shmem::barrier_all().unwrap();
    shmem::sync_all().unwrap();
    shmem::quiet().unwrap();
    shmem::fence().unwrap();

    sh.finalize().unwrap();
    assert!(matches!(
        shmem::n_pes(),
        Err(ShmemError::NotInitialized { .. })
    ));
    assert_eq!(shmem::init().unwrap_err(), ShmemError::Finalized);
}
