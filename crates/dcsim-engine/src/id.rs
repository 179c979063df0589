/// Defines a typed arena index: a `#[repr(transparent)]` newtype over `u32`.
///
/// Indexing one arena with another arena's ID is a type error. `u32` halves the size of
/// `usize` indices and is enough for four billion of anything.
///
/// ```
/// dcsim_engine::define_id!(
///     /// A widget.
///     WidgetId
/// );
/// let w = WidgetId::new(3);
/// assert_eq!(w.index(), 3);
/// ```
#[macro_export]
macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
        #[repr(transparent)]
        pub struct $name(pub u32);

        impl $name {
            /// The ID for arena slot `i`.
            ///
            /// # Panics
            /// If `i` does not fit in `u32` (an arena of over four billion entries).
            #[inline]
            pub fn new(i: usize) -> Self {
                Self(u32::try_from(i).expect("arena index exceeds u32"))
            }
            /// The arena slot of this ID.
            #[inline]
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                ::core::fmt::Display::fmt(&self.0, f)
            }
        }
    };
}
