//! Integration tests of dcsim-arbiter, compiled into one binary (docs/style.md §7).

mod allocator;
mod path;
mod support;
