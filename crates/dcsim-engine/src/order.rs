//! A place in the order in which events are created, which a handler of a split run may
//! reserve for an event created later in its name. It is kept apart from the scheduler
//! and the parallel runs, which both name it, so that neither depends on the other.

/// A place in the order of creation, reserved by a handler ([`Out::reserve`]) for an
/// event that may be created later, elsewhere, in its name ([`Late`]).
///
/// This is how a split model creates an event exactly where one thread would have, when
/// the part that would have created it learns of it too late. In a network split between
/// threads, the receiving end of a link creates the event of the next packet's arrival
/// when the packet before it arrives, if the next one is on the link by then; if that
/// packet was put on the link less than a window before, the receiving part has not heard
/// of it yet. So at every arrival that finds no next packet it reserves a slot as its
/// first creation, and when the copy of the next packet reaches it, it creates that
/// packet's arrival in the slot. At an exact tie (the packet put on the link at the very
/// time the one before arrives) the sender reserves a slot too, and the event takes the
/// later of the two: whichever handler came second would have created it. A slot left
/// unused is a gap in the numbers, which changes no order.
///
/// [`Out::reserve`]: crate::parallel::Out::reserve
/// [`Late`]: crate::parallel::Late
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The part whose handler reserved it.
    pub(crate) part: u32,
    /// Its number: global in a one-thread run, the part's provisional count in a parallel
    /// run.
    pub(crate) num: u64,
}
