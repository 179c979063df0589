//! Transports of dcsim: the shared reliable transport ([`tcp`]) with pluggable congestion
//! control ([`cc`]), ExpressPass ([`xpass`]), and the flow table that dispatches packets
//! and timers to them.
//!
//! A transport is a pair of sans-IO state machines per flow, sender and receiver, with
//! optional per-host state ([`endpoint`]). Each handler gets an [`EndpointCx`] that lets
//! it send on its own host's NIC and arm its own timers; it never touches ports, links,
//! routes or other flows. Transports are registered in one place, the `transports!` list
//! below, from which the scenario syntax ([`TransportSpec`]), validation, `dcsim list`,
//! labels and dispatch are generated.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cc;
pub mod endpoint;
pub mod fastpass;
mod flows;
pub mod ideal;
mod ranges;
mod record;
mod retired;
pub mod tcp;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod xpass;

use dcsim_engine::RngTree;
use dcsim_engine::spec::{self, Kind};
use dcsim_net::Packet;
use serde::de;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use dcsim_net::FlowId;
pub use endpoint::{
    EndpointCx, FlowCx, FlowEvent, FlowInfo, FlowShared, Grant, Needs, PacketFormat, Receiver,
    Sched, Sender, Side, TcpView, TimerKey, TraceHeader, Transport,
};
pub use flows::{FlowSpec, Flows};
pub use record::{FlowRecord, MAX_FLOW_COUNTERS};
pub use tcp::{TcpConfig, TcpProfile};

use flows::Pair;

/// The registry: one line per transport, `Variant(path::Type)`; the first is the default.
/// Generates [`TransportSpec`] (the scenario syntax) and the flow table's dispatch.
macro_rules! transports {
    // `$d` is a `$` handed in by the caller, so that the generated `with_pair!` macro can
    // have metavariables of its own.
    ($d:tt; $($(#[$doc:meta])* $V:ident($T:ty)),+ $(,)?) => {
        /// A transport as written in a scenario (`kind = "..."`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum TransportSpec {
            $($(#[$doc])* $V(<$T as Transport>::Config),)+
        }

        impl TransportSpec {
            /// The transports a scenario can name, in registration order.
            pub const KINDS: &'static [Kind] = &[$(Kind {
                name: <$T as Transport>::NAME,
                about: <$T as Transport>::ABOUT,
            }),+];
            const NAMES: &'static [&'static str] = &[$(<$T as Transport>::NAME),+];

            /// The transport's name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$V(_) => <$T as Transport>::NAME,)+ }
            }
            /// Checks parameter ranges; the error names the field.
            pub fn validate(&self) -> Result<(), String> {
                match self { $(Self::$V(c) => <$T as Transport>::validate(c),)+ }
            }
            /// The spec with every profile default filled in (what `dcsim show` prints).
            pub fn resolved(&self) -> Self {
                match self { $(Self::$V(c) => Self::$V(<$T as Transport>::resolve(c)),)+ }
            }
            /// Short name for output ("dctcp", "reno", "expresspass").
            pub fn label(&self) -> &'static str {
                match self { $(Self::$V(c) => <$T as Transport>::label(c),)+ }
            }
            /// What the transport needs of the network.
            pub fn needs(&self) -> Needs {
                match self { $(Self::$V(c) => <$T as Transport>::needs(c),)+ }
            }
            /// Names of the per-flow counters it reports (see [`Transport::FLOW_COUNTERS`]).
            pub fn flow_counters(&self) -> &'static [&'static str] {
                match self { $(Self::$V(_) => <$T as Transport>::FLOW_COUNTERS,)+ }
            }
            /// Sizes of its data packets.
            pub fn packet_format(&self) -> PacketFormat {
                match self { $(Self::$V(c) => <$T as Transport>::packet_format(c),)+ }
            }
            /// How `pkt`, a packet of this transport, appears in a packet trace.
            pub fn trace_header(&self, pkt: &Packet) -> TraceHeader {
                match self { $(Self::$V(c) => <$T as Transport>::trace_header(c, pkt),)+ }
            }
            /// Every registered transport with default parameters, in registration order.
            pub fn defaults() -> Vec<Self> {
                vec![$(Self::$V(Default::default())),+]
            }
            /// Whether the sender alone knows when a flow has finished
            /// ([`Transport::SENDER_FINISHES`]).
            pub fn sender_finishes(&self) -> bool {
                match self { $(Self::$V(_) => <$T as Transport>::SENDER_FINISHES,)+ }
            }
            /// Whether a packet that arrives after its flow finished may change the flow's
            /// record ([`Transport::COUNTS_STRAGGLERS`]).
            pub(crate) fn counts_stragglers(&self) -> bool {
                match self { $(Self::$V(_) => <$T as Transport>::COUNTS_STRAGGLERS,)+ }
            }
            /// Books a packet that arrived after both ends of its flow had finished.
            pub(crate) fn on_straggler(&self, pkt: &Packet, r: &mut FlowRecord) {
                match self { $(Self::$V(_) => <$T as Transport>::on_straggler(pkt, r),)+ }
            }
            /// Both ends of a new flow.
            pub(crate) fn open(&self, flow: &FlowInfo, rng: &RngTree) -> Conn {
                match self {
                    $(Self::$V(c) => {
                        let (tx, rx) = <$T as Transport>::open(c, flow, rng);
                        Conn::$V(Pair::new(tx, rx, flow.size_bytes))
                    })+
                }
            }
        }

        impl Serialize for TransportSpec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$V(c) => spec::serialize_tagged(<$T as Transport>::NAME, c, s),)+
                }
            }
        }

        impl<'de> Deserialize<'de> for TransportSpec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                spec::deserialize_tagged(d, Self::NAMES, |kind, params| {
                    $(if kind == <$T as Transport>::NAME {
                        return spec::params(params).map(Self::$V);
                    })+
                    Err(de::Error::custom(format_args!("no transport {kind:?}")))
                })
            }
        }

        $(const _: () = assert!(
            <$T as Transport>::FLOW_COUNTERS.len() <= record::MAX_FLOW_COUNTERS,
            "a transport reports more per-flow counters than a record holds"
        );)+

        /// Both ends of one running flow, whatever its transport.
        #[allow(clippy::large_enum_variant)] // boxed in the flow table
        pub(crate) enum Conn {
            $($V(Pair<$T>),)+
        }

        impl Conn {
            /// Swaps the receiving ends of two connections of one flow.
            pub(crate) fn swap_receiver(&mut self, other: &mut Conn) {
                match (self, other) {
                    $((Conn::$V(a), Conn::$V(b)) => a.swap_receiver(b),)+
                    _ => unreachable!("one flow, one transport"),
                }
            }
        }

        /// Every transport's per-host state, indexed by host.
        #[allow(non_snake_case)] // one field per registered transport, named as its variant
        pub(crate) struct HostStates {
            $($V: Vec<<$T as Transport>::Host>,)+
        }

        impl HostStates {
            pub(crate) fn new(hosts: usize) -> Self {
                Self { $($V: (0..hosts).map(|_| Default::default()).collect(),)+ }
            }
        }

        /// Runs `body` with the flow's pair `p` (of whatever transport) and, in the first
        /// form, `h`, that transport's state on host `host`.
        macro_rules! with_pair {
            ($d conn:expr, $d states:expr, $d host:expr, |$d p:ident, $d h:ident| $d body:expr) => {
                match $d conn {
                    $(Conn::$V($d p) => {
                        let $d h = &mut $d states.$V[$d host.index()];
                        $d body
                    })+
                }
            };
            ($d conn:expr, |$d p:ident| $d body:expr) => {
                match $d conn { $(Conn::$V($d p) => $d body,)+ }
            };
        }
        pub(crate) use with_pair;
    };
}

transports! { $;
    /// The shared reliable transport (TCP) with a congestion controller.
    Tcp(tcp::Tcp),
    /// ExpressPass: receiver-driven credits.
    Expresspass(xpass::Xpass),
    /// The Ideal scheme: senders paced at an oracle's max-min rates.
    Ideal(ideal::Ideal),
    /// Fastpass: packets in arbiter-granted timeslots on arbiter-chosen paths.
    Fastpass(fastpass::Fastpass),
}

impl Default for TransportSpec {
    fn default() -> Self {
        Self::Tcp(TcpConfig::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counter names are columns of one table: no two transports may use the same one.
    #[test]
    fn flow_counter_names_are_unique_across_transports() {
        let mut names: Vec<&str> = TransportSpec::defaults()
            .iter()
            .flat_map(|t| t.flow_counters().iter().copied())
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}
