//! Property tests of the symmetric-heap allocator: random sequences of
//! alloc, align, free and realloc against a model of the live blocks.

use proptest::prelude::*;
use shmem::alloc::{AllocError, GRANULE, HeapAllocator};

#[derive(Clone, Debug)]
enum Op {
    Alloc { size: usize, align_log2: u32 },
    Free { pick: usize },
    Realloc { pick: usize, size: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..3000, 0u32..10).prop_map(|(size, align_log2)| Op::Alloc { size, align_log2 }),
        3 => any::<usize>().prop_map(|pick| Op::Free { pick }),
        2 => (any::<usize>(), 0usize..4000).prop_map(|(pick, size)| Op::Realloc { pick, size }),
    ]
}

/// A live block as the test sees it: offset, requested size, alignment.
#[derive(Clone, Debug)]
struct Block {
    off: usize,
    size: usize,
    align: usize,
}

fn check_invariants(h: &HeapAllocator, blocks: &[Block]) {
    // Live blocks: in bounds, aligned, disjoint, exactly the model's.
    let mut live: Vec<(usize, usize)> = h.live().collect();
    assert_eq!(live.len(), blocks.len());
    for b in blocks {
        let len = h.len_of(b.off).expect("model block is live");
        assert!(len >= b.size.max(1), "block {b:?} shorter than requested");
        assert_eq!(len % GRANULE, 0);
        assert_eq!(b.off % b.align.max(GRANULE), 0, "block {b:?} misaligned");
        assert!(b.off + len <= h.size());
    }
    let mut free: Vec<(usize, usize)> = h.free_extents().collect();
    // Free extents are coalesced: never adjacent to each other.
    for w in free.windows(2) {
        assert!(w[0].0 + w[0].1 < w[1].0, "free extents {w:?} not coalesced");
    }
    let free_sum: usize = free.iter().map(|e| e.1).sum();
    assert_eq!(free_sum, h.free_bytes());
    // Live and free extents tile the heap exactly: no overlap, no leak.
    live.append(&mut free);
    live.sort();
    let mut at = 0;
    for (o, l) in live {
        assert_eq!(o, at, "gap or overlap at {at:#x}");
        assert!(l > 0);
        at = o + l;
    }
    assert_eq!(at, h.size());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_sequences_keep_the_heap_consistent(
        heap_kib in 1usize..64,
        ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut h = HeapAllocator::new(heap_kib << 10);
        // A second allocator fed the same calls must answer the same
        // (determinism: every PE computes the same offsets).
        let mut twin = HeapAllocator::new(heap_kib << 10);
        let mut blocks: Vec<Block> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc { size, align_log2 } => {
                    let align = 1usize << align_log2;
                    let r = h.alloc(size, align);
                    prop_assert_eq!(&r, &twin.alloc(size, align));
                    match r {
                        Ok(off) => blocks.push(Block { off, size, align }),
                        Err(AllocError::Exhausted { requested, free, largest, heap, .. }) => {
                            prop_assert_eq!(requested, size);
                            prop_assert_eq!(free, h.free_bytes());
                            prop_assert_eq!(heap, h.size());
                            // Exhaustion is real: no free extent could hold
                            // the aligned request.
                            let need = size.max(1).div_ceil(GRANULE) * GRANULE;
                            let a = align.max(GRANULE);
                            for (o, l) in h.free_extents() {
                                let start = o.div_ceil(a) * a;
                                prop_assert!(start + need > o + l, "fits at {o:#x}");
                            }
                            prop_assert!(largest <= free);
                        }
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
                Op::Free { pick } => {
                    if blocks.is_empty() {
                        continue;
                    }
                    let b = blocks.swap_remove(pick % blocks.len());
                    let before = h.free_bytes();
                    let len = h.len_of(b.off).unwrap();
                    h.free(b.off).unwrap();
                    twin.free(b.off).unwrap();
                    prop_assert_eq!(h.free_bytes(), before + len);
                    // A second free of the same offset is refused.
                    prop_assert_eq!(h.free(b.off), Err(AllocError::NotAllocated(b.off)));
                    // Reuse after free: the same request fits again, at or
                    // below the freed offset (first fit).
                    let again = h.alloc(b.size, b.align).unwrap();
                    prop_assert!(again <= b.off);
                    prop_assert_eq!(twin.alloc(b.size, b.align).unwrap(), again);
                    h.free(again).unwrap();
                    twin.free(again).unwrap();
                }
                Op::Realloc { pick, size } => {
                    if blocks.is_empty() {
                        continue;
                    }
                    let i = pick % blocks.len();
                    let b = blocks[i].clone();
                    let old_len = h.len_of(b.off).unwrap();
                    let snapshot: Vec<(usize, usize)> = h.live().collect();
                    let r = h.realloc(b.off, size, b.align);
                    prop_assert_eq!(&r, &twin.realloc(b.off, size, b.align));
                    match r {
                        Ok(r) => {
                            prop_assert_eq!(r.old_len, old_len);
                            let need = size.max(1).div_ceil(GRANULE) * GRANULE;
                            if need <= old_len {
                                // Shrinking never moves.
                                prop_assert!(!r.moved);
                            }
                            if !r.moved {
                                prop_assert_eq!(r.offset, b.off);
                            } else {
                                // A moved block does not overlap the old one,
                                // whose contents the caller copies from.
                                prop_assert!(
                                    r.offset + need <= b.off || b.off + old_len <= r.offset
                                );
                            }
                            // Other blocks did not move.
                            for (o, l) in snapshot {
                                if o != b.off {
                                    prop_assert_eq!(h.len_of(o), Some(l));
                                }
                            }
                            blocks[i] = Block { off: r.offset, size, ..b };
                        }
                        Err(AllocError::Exhausted { .. }) => {
                            // Failure changes nothing.
                            prop_assert_eq!(h.live().collect::<Vec<_>>(), snapshot);
                        }
                        Err(e) => prop_assert!(false, "unexpected {e}"),
                    }
                }
            }
            check_invariants(&h, &blocks);
        }
        // Freeing everything restores one extent holding the whole heap.
        for b in blocks.drain(..) {
            h.free(b.off).unwrap();
        }
        prop_assert_eq!(h.free_extents().collect::<Vec<_>>(), if h.size() > 0 { vec![(0, h.size())] } else { vec![] });
        prop_assert_eq!(h.alloc(h.size(), 1).unwrap(), 0);
    }

    #[test]
    fn exhaustion_then_success_after_free(n in 1usize..40, size in 1usize..500) {
        let heap = 8 << 10;
        let mut h = HeapAllocator::new(heap);
        let mut offs = Vec::new();
        loop {
            match h.alloc(size, 16) {
                Ok(o) => offs.push(o),
                Err(AllocError::Exhausted { requested, .. }) => {
                    prop_assert_eq!(requested, size);
                    break;
                }
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }
        let granules = size.div_ceil(GRANULE) * GRANULE;
        prop_assert_eq!(offs.len(), heap / granules);
        let victim = offs[n % offs.len()];
        h.free(victim).unwrap();
        prop_assert_eq!(h.alloc(size, 16).unwrap(), victim);
    }
}
