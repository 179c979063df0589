//! `[controller]` in a scenario: the services a user configures by name.
//!
//! The other services come with a transport (the Ideal scheme's oracle, the Fastpass
//! arbiter); a controller is asked for in its own section, `[controller] kind = "..."`.
//! Each kind is a configuration type implementing [`ControllerConfig`] and one line in
//! the `controller_kinds!` registry below, which generates [`ControllerSpec`], its scenario
//! syntax (a name, or a table tagged by `kind`, through `dcsim_engine::spec`) and its
//! `dcsim list` rows. The service that runs it finds its configuration in
//! [`crate::BuildCx::controller`].

use core::fmt;

use dcsim_engine::spec::{self, Kind};
use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::sdn_ecn::SdnEcnConfig;

/// The configuration of one kind of controller.
pub trait ControllerConfig:
    Clone + fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned
{
    /// Its name in scenario files (`kind = "sdn-ecn"`).
    const NAME: &'static str;
    /// One line for `dcsim list`.
    const ABOUT: &'static str;
    /// Checks parameter ranges; the error starts with the parameter's name.
    ///
    /// # Errors
    /// The first value out of range.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

macro_rules! controller_kinds {
    ($($(#[$doc:meta])* $V:ident($T:ty)),+ $(,)?) => {
        /// A controller as written in a scenario (`[controller]`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum ControllerSpec {
            $($(#[$doc])* $V($T),)+
        }

        impl ControllerSpec {
            /// The controllers a scenario can name, in registration order.
            pub const KINDS: &'static [Kind] = &[$(Kind {
                name: <$T as ControllerConfig>::NAME,
                about: <$T as ControllerConfig>::ABOUT,
            }),+];
            const NAMES: &'static [&'static str] = &[$(<$T as ControllerConfig>::NAME),+];

            /// The controller's name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$V(_) => <$T as ControllerConfig>::NAME,)+ }
            }
            /// Checks parameter ranges; the error names the field.
            ///
            /// # Errors
            /// The first value out of range.
            pub fn validate(&self) -> Result<(), String> {
                match self { $(Self::$V(c) => c.validate(),)+ }
            }
            /// Every registered controller with default parameters, in registration order.
            pub fn defaults() -> Vec<Self> {
                vec![$(Self::$V(Default::default())),+]
            }
        }

        impl Serialize for ControllerSpec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$V(c) => spec::serialize_tagged(<$T as ControllerConfig>::NAME, c, s),)+
                }
            }
        }

        impl<'de> Deserialize<'de> for ControllerSpec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                spec::deserialize_tagged(d, Self::NAMES, |kind, params| {
                    $(if kind == <$T as ControllerConfig>::NAME {
                        return spec::params(params).map(Self::$V);
                    })+
                    Err(de::Error::custom(format_args!("no controller {kind:?}")))
                })
            }
        }
    };
}

controller_kinds! {
    /// The SDN ECN controller of the central-control thesis (docs/protocols/sdn-ecn.md).
    SdnEcn(SdnEcnConfig),
}
