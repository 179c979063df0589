//! Control-plane services: components that act beside the packet path.
//!
//! A service is not a transport or a queue discipline: it sees the whole network and every
//! flow, acts on its own clock, and reaches flows only through what the flow table offers a
//! central scheduler ([`Flows::grant`]) and the network only through its public handles
//! (sending a control packet from a host, installing a marking rule, reading counters).
//! Three are registered:
//!
//! - [`oracle::Oracle`]: the Ideal scheme's max-min fair rates, recomputed at every start
//!   and completion of an `ideal` flow;
//! - [`sdn_ecn::SdnEcn`]: the SDN ECN controller of `[controller] kind = "sdn-ecn"`;
//! - [`fastpass::Fastpass`]: the Fastpass arbiter, the hosts' side of its control protocol
//!   and the timeslot clock, for `fastpass` flows.
//!
//! A new service is one file implementing [`Service`] and one line in the `services!`
//! registry below: the facade (`dcsim::World`) builds, drives and reports every registered
//! service without naming any. See CONTRIBUTING.md, "Adding a control-plane service".

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod controller;
pub mod fastpass;
pub mod oracle;
pub mod sdn_ecn;
mod service;

pub use controller::ControllerSpec;
pub use service::{BuildCx, CheckCx, Service, ServiceCx, ServiceSched};

use dcsim_engine::{Schedule, Time};
use dcsim_net::{FlowId, HostId, Network, Packet};
use dcsim_transport::{FlowInfo, Flows};
use serde_json::Value;

#[cfg(doc)]
use dcsim_transport::Grant;

/// Flow numbers from here up are never flows: a service's control packets carry
/// [`control_flow`] of its index, so that the facade hands them to the service.
pub const FIRST_CONTROL_FLOW: u32 = u32::MAX - 15;

/// The flow number that the control packets of the service registered with number `n`
/// carry.
pub const fn control_flow(n: u8) -> FlowId {
    FlowId(u32::MAX - n as u32)
}

macro_rules! services {
    ($($(#[$doc:meta])* $V:ident($T:ty) = $i:literal),+ $(,)?) => {
        /// An event of one service, as the facade's event enum carries it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ServiceEvent {
            $($(#[$doc])* $V(<$T as Service>::Event),)+
        }

        $(
            impl From<<$T as Service>::Event> for ServiceEvent {
                fn from(e: <$T as Service>::Event) -> Self {
                    Self::$V(e)
                }
            }
            impl service::Registered for $T {
                const INDEX: u8 = $i;
            }
        )+

        /// The services of one world: at most one of each kind, built when the scenario
        /// wants it.
        #[allow(non_snake_case)] // one field per registered service, named as its variant
        #[derive(Default)]
        pub struct Services {
            $($V: Option<$T>,)+
            /// Whether some service wants to hear of completed flows.
            completions: bool,
        }

        impl Services {
            /// The summary keys of every registered service, in registry order.
            pub const SUMMARY_KEYS: &'static [&'static str] = &[$(<$T as Service>::SUMMARY_KEY),+];

            /// Checks what every service needs of a scenario (before anything is built).
            ///
            /// # Errors
            /// The first problem, naming its key.
            pub fn check(cx: &CheckCx<'_>) -> Result<(), String> {
                $(<$T as Service>::check(cx)?;)+
                Ok(())
            }

            /// Whether the scenario wants any service.
            pub fn any_wanted(cx: &CheckCx<'_>) -> bool {
                false $(|| <$T as Service>::wanted(cx))+
            }

            /// Builds the services the scenario wants, in registry order.
            ///
            /// # Errors
            /// A service that cannot run on this network, naming the key to change.
            pub fn build<S: ServiceSched>(cx: &mut BuildCx<'_, S>) -> Result<Self, String> {
                let mut s = Self::default();
                $(
                    s.$V = <$T as Service>::build(cx)?;
                    s.completions |= s.$V.is_some() && <$T as Service>::WANTS_COMPLETIONS;
                )+
                if s.completions {
                    cx.flows.track_completions();
                }
                Ok(s)
            }

            /// Whether no service runs.
            pub fn is_empty(&self) -> bool {
                true $(&& self.$V.is_none())+
            }

            /// The name of a running service that a run split between threads cannot
            /// carry, if any (as a scenario names it).
            pub fn unsplittable(&self) -> Option<&'static str> {
                $(
                    if self.$V.is_some() && !<$T as Service>::SPLITTABLE {
                        return Some(<$T as Service>::CONFIGURED_BY);
                    }
                )+
                None
            }

            /// Handles one of the services' events.
            pub fn on_event<S: ServiceSched>(&mut self, ev: ServiceEvent, cx: &mut ServiceCx<'_, S>) {
                match ev {
                    $(ServiceEvent::$V(e) => {
                        if let Some(s) = &mut self.$V {
                            s.on_event(e, cx);
                        }
                    })+
                }
            }

            /// Flow `info.flow` started (its transport has opened it).
            pub fn on_flow_start<S: ServiceSched>(&mut self, info: &FlowInfo, cx: &mut ServiceCx<'_, S>) {
                $(
                    if let Some(s) = &mut self.$V {
                        s.on_flow_start(info, cx);
                    }
                )+
            }

            /// A packet was delivered to a host: the services that asked hear of the
            /// flows it completed.
            #[inline]
            pub fn after_delivery<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
                if self.completions {
                    self.completions_slow(cx);
                }
            }

            #[inline(never)]
            fn completions_slow<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
                $(
                    if let Some(s) = &mut self.$V
                        && <$T as Service>::WANTS_COMPLETIONS
                    {
                        s.on_completions(cx);
                    }
                )+
            }

            /// A control packet (its flow at or above [`FIRST_CONTROL_FLOW`]) arrived at
            /// `host`: the service whose packet it is reads it; the caller frees it.
            pub fn on_packet<S: ServiceSched>(&mut self, host: HostId, pkt: &Packet, cx: &mut ServiceCx<'_, S>) {
                let index = (u32::MAX - pkt.flow.0) as u8;
                $(
                    if index == $i {
                        if let Some(s) = &mut self.$V {
                            s.on_packet(host, pkt, cx);
                        }
                        return;
                    }
                )+
            }

            /// Packets the services' hosts consumed (the flow table counts the others).
            pub fn packets_delivered(&self) -> u64 {
                0 $(+ self.$V.as_ref().map_or(0, |s| s.packets_delivered()))+
            }

            /// Every registered service's figures for summary.json, under its key, in
            /// registry order (`null` for a service that did not run).
            pub fn summary(&self, net: &Network, flows: &Flows) -> Vec<(&'static str, Value)> {
                vec![$((
                    <$T as Service>::SUMMARY_KEY,
                    self.$V.as_ref().map_or(Value::Null, |s| s.summary(net, flows)),
                )),+]
            }
        }
    };
}

// One line per service: `Variant(Type) = n`, where `n` (distinct, below 16) numbers its
// control packets' flow (`control_flow(n)`). The order is that of summary.json's keys and of
// the services' hooks.
services! {
    /// The Ideal scheme's oracle: max-min fair rates for `ideal` flows.
    Oracle(oracle::Oracle) = 1,
    /// The SDN ECN controller (`[controller] kind = "sdn-ecn"`).
    SdnEcn(sdn_ecn::SdnEcn) = 2,
    /// Fastpass: the arbiter, its control protocol and the timeslot clock.
    Fastpass(fastpass::Fastpass) = 0,
}

/// Schedules a service's own event (for the services' code: `at(cx, t, MyEvent::Tick)`).
pub(crate) fn at<S: Schedule<ServiceEvent>>(sched: &mut S, t: Time, ev: impl Into<ServiceEvent>) {
    sched.at(t, ev.into());
}
