//! Packet traces (`[output.trace]`): pcap files of chosen hosts and ports, with Ethernet,
//! IPv4 and TCP or UDP headers, that Wireshark and tshark open (docs/trace.md).
//!
//! The network keeps a copy of each packet that crosses a tapped link, taken when the
//! packet reaches the far end and before the next node touches it
//! ([`Network::tap`]). A port's trace shows what the port sent, stamped when its
//! transmission started (the arrival less the propagation delay and the serialization,
//! which a port that releases packets at the start does not wait for);
//! a host's trace shows what its NIC sent, stamped the same way, and what its edge switch
//! delivered to it, stamped at the arrival of the last bit, as a capture on the host's own
//! interface would. Records are written in time order: the copies wait in a buffer until
//! no later copy can carry an earlier time stamp.
//!
//! Nothing here runs on the packet path of a run without traces, and a trace changes
//! nothing in the simulation (its other outputs are byte-identical with and without).

use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::time::Duration;

use dcsim_engine::{Dur, Time};
use dcsim_net::{Captured, Class, Ecn, HostId, Network, Packet, PortId, RouteId, wire};
use dcsim_transport::{Flows, TcpView, TraceHeader};
use etherparse::{
    EtherType, Ethernet2Header, IpDscp, IpEcn, IpNumber, Ipv4Header, TcpHeader, UdpHeader,
};
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

use crate::scenario::{TraceSpec, port_by_label};

/// Copies waiting in the time-order buffer before it is sorted and written.
const TRACE_BATCH: usize = 4096;
/// Bytes of the generic UDP header that dcsim writes (docs/trace.md).
pub const UDP_HEADER_BYTES: usize = 18;
/// The largest packet whose serialization the time-order buffer allows for (64 KiB).
const LARGEST_PACKET_BYTES: u64 = 65_536 + wire::FRAMING_BYTES as u64;
/// Bytes of a pcap file's header and of each record's header.
const PCAP_FILE_HEADER: u64 = 24;
const PCAP_RECORD_HEADER: u64 = 16;
/// The first of the ports that carry flow numbers: the dynamic range (RFC 6335), where
/// Wireshark has few dissectors that could claim a flow's datagrams.
const FIRST_PORT: u32 = 49_152;
const PORTS: u32 = 16_384;

/// Which end of a link a trace records a packet at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// The port's own end: stamped at the start of transmission.
    Sent,
    /// The far end: stamped at the arrival of the last bit.
    Received,
}

#[derive(Clone, Copy, Debug)]
struct Sink {
    file: u32,
    side: Side,
}

/// One pcap file of a trace.
pub(crate) struct TraceFile {
    /// File name in the results folder (`trace-h3.pcap`).
    pub name: String,
    writer: Option<PcapWriter<BufWriter<File>>>,
    /// Packets written.
    pub packets: u64,
    /// Bytes written.
    pub bytes: u64,
    /// Packets left out because the file had reached `max_bytes`.
    pub over_limit: u64,
    error: Option<io::Error>,
}

/// A copy waiting for its turn in the time order.
struct Pending {
    at: Time,
    order: u64,
    file: u32,
    pkt: Packet,
}

/// The trace of a run: which links feed which files, the filters, the files.
pub(crate) struct Tracer {
    /// Per port: the files that record what crosses its link.
    taps: Vec<Vec<Sink>>,
    pub(crate) files: Vec<TraceFile>,
    /// Only these flows (sorted), if given.
    flows: Option<Vec<u32>>,
    start: Time,
    end: Time,
    max_bytes: u64,
    /// How far behind the present a copy's time stamp can be.
    lag: Dur,
    pending: Vec<Pending>,
    order: u64,
    /// Where the files are created (beside the results), else the system's temporary
    /// folder.
    dir: Option<PathBuf>,
}

impl Tracer {
    /// The trace of `spec` on `net` (whose labels the scenario check has validated); taps
    /// the links it records.
    pub(crate) fn new(spec: &TraceSpec, net: &mut Network, graph: &dcsim_net::Graph) -> Self {
        let mut taps: Vec<Vec<Sink>> = vec![Vec::new(); net.ports().len()];
        let mut files = Vec::new();
        let mut add = |name: String, ports: &[(PortId, Side)]| {
            let file = files.len() as u32;
            files.push(TraceFile {
                name,
                writer: None,
                packets: 0,
                bytes: 0,
                over_limit: 0,
                error: None,
            });
            for &(p, side) in ports {
                taps[p.index()].push(Sink { file, side });
            }
        };
        for &h in &spec.hosts {
            let h = HostId(h);
            let name = format!("trace-{}.pcap", net.node_name(net.host_node(h)));
            add(
                name,
                &[
                    (net.nic(h), Side::Sent),
                    (net.host_downlink(h), Side::Received),
                ],
            );
        }
        for label in &spec.ports {
            let p = PortId::new(port_by_label(graph, label).expect("checked port label"));
            add(
                format!("trace-{}.pcap", label.replace("->", "-to-")),
                &[(p, Side::Sent)],
            );
        }
        let mut lag = Dur::ZERO;
        for (i, sinks) in taps.iter().enumerate() {
            if !sinks.is_empty() {
                let port = net.port(PortId::new(i));
                lag = lag.max(port.delay() + port.rate().tx_time(LARGEST_PACKET_BYTES));
                net.tap(PortId::new(i));
            }
        }
        Self {
            taps,
            files,
            flows: spec.flows.clone().map(|mut f| {
                f.sort_unstable();
                f
            }),
            start: spec.start.map_or(Time::ZERO, Time::from_dur),
            end: spec.end.map_or(Time::MAX, Time::from_dur),
            max_bytes: spec.max_bytes.0,
            lag,
            pending: Vec::new(),
            order: 0,
            dir: None,
        }
    }

    /// Creates the files in `dir` (beside the results, on their disk).
    pub(crate) fn write_in(&mut self, dir: &Path) {
        self.dir = Some(dir.to_path_buf());
    }

    /// Takes the network's captured copies and writes every record that can no longer be
    /// overtaken by a later copy (all of them with `last`).
    pub(crate) fn collect(&mut self, now: Time, net: &mut Network, flows: &Flows, last: bool) {
        let captured = std::mem::take(net.take_captured());
        for c in &captured {
            self.accept(c, net);
        }
        // Give the vector back, emptied, so that capturing allocates nothing once warm.
        let mut captured = captured;
        captured.clear();
        *net.take_captured() = captured;
        if !last && self.pending.len() < TRACE_BATCH {
            return;
        }
        self.pending.sort_unstable_by_key(|p| (p.at, p.order));
        let safe = if last {
            self.pending.len()
        } else {
            let watermark = Time(now.0.saturating_sub(self.lag.0));
            self.pending.partition_point(|p| p.at < watermark)
        };
        let mut buf = [0u8; 64];
        for i in 0..safe {
            let p = &self.pending[i];
            let (caplen, orig_len) = frame(&p.pkt, flows, net, &mut buf);
            write_record(
                &mut self.files[p.file as usize],
                self.dir.as_deref(),
                self.max_bytes,
                p.at,
                &buf[..caplen],
                orig_len,
            );
        }
        self.pending.drain(..safe);
    }

    /// Files each sink of the copy's link that the filters let through.
    fn accept(&mut self, c: &Captured, net: &Network) {
        if let Some(f) = &self.flows
            && f.binary_search(&c.pkt.flow.0).is_err()
        {
            return;
        }
        for s in &self.taps[c.port.index()] {
            let at = match s.side {
                Side::Received => c.at,
                Side::Sent => {
                    let port = net.port(c.port);
                    // A port that releases packets at the start hands each on whole.
                    let tx = if port.releases_at_start() {
                        Dur::ZERO
                    } else {
                        port.rate().tx_time(u64::from(c.pkt.wire_bytes))
                    };
                    let before = port.delay() + tx;
                    Time(c.at.0.saturating_sub(before.0))
                }
            };
            if at < self.start || at >= self.end {
                continue;
            }
            self.pending.push(Pending {
                at,
                order: self.order,
                file: s.file,
                pkt: c.pkt,
            });
            self.order += 1;
        }
    }

    /// Writes what is left and hands over the finished files (each created even if it
    /// holds no packet), ready to be read from their start.
    pub(crate) fn finish(
        &mut self,
        net: &mut Network,
        flows: &Flows,
    ) -> Vec<(String, io::Result<File>)> {
        self.collect(Time::MAX, net, flows, true);
        let dir = self.dir.clone();
        self.files
            .iter_mut()
            .map(|f| {
                let file = open(f, dir.as_deref()).and_then(|_| {
                    let w = f.writer.take().expect("opened above");
                    w.into_writer().into_inner().map_err(|e| e.into_error())
                });
                (f.name.clone(), file)
            })
            .collect()
    }
}

/// Opens `f`'s temporary file and writes the pcap header, if not yet done; returns the
/// error met, if any (then and for ever after).
fn open(f: &mut TraceFile, dir: Option<&Path>) -> io::Result<()> {
    if let Some(e) = &f.error {
        return Err(io::Error::new(e.kind(), e.to_string()));
    }
    if f.writer.is_some() {
        return Ok(());
    }
    let made = match dir {
        Some(d) => tempfile::tempfile_in(d),
        None => tempfile::tempfile(),
    }
    .and_then(|file| {
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: 65_535,
            datalink: DataLink::ETHERNET,
            ts_resolution: TsResolution::NanoSecond,
            endianness: Endianness::Little,
        };
        PcapWriter::with_header(BufWriter::new(file), header).map_err(pcap_error)
    });
    match made {
        Ok(w) => {
            f.writer = Some(w);
            f.bytes = PCAP_FILE_HEADER;
            Ok(())
        }
        Err(e) => {
            let e = io::Error::new(e.kind(), format!("packet trace {}: {e}", f.name));
            f.error = Some(io::Error::new(e.kind(), e.to_string()));
            Err(e)
        }
    }
}

fn write_record(
    f: &mut TraceFile,
    dir: Option<&Path>,
    max_bytes: u64,
    at: Time,
    data: &[u8],
    orig_len: u32,
) {
    if open(f, dir).is_err() {
        return;
    }
    let size = PCAP_RECORD_HEADER + data.len() as u64;
    if f.bytes + size > max_bytes {
        f.over_limit += 1;
        return;
    }
    let ts = Duration::from_nanos(at.as_ns());
    let w = f.writer.as_mut().expect("opened above");
    match w.write_packet(&PcapPacket::new(ts, orig_len, data)) {
        Ok(_) => {
            f.packets += 1;
            f.bytes += size;
        }
        Err(e) => {
            let e = pcap_error(e);
            f.error = Some(io::Error::new(
                e.kind(),
                format!("packet trace {}: {e}", f.name),
            ));
        }
    }
}

fn pcap_error(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        e => io::Error::other(e.to_string()),
    }
}

/// The IPv4 address of host `h`: 10.0.0.0/8 numbered from 10.0.0.1 (host 0).
pub fn host_ip(h: HostId) -> [u8; 4] {
    (0x0A00_0000 | (h.0.wrapping_add(1) & 0x00FF_FFFF)).to_be_bytes()
}

/// The MAC address of host `h`: locally administered, 02:00:00 then the host's number
/// plus one.
pub fn host_mac(h: HostId) -> [u8; 6] {
    let n = h.0.wrapping_add(1).to_be_bytes();
    [0x02, 0, 0, n[1], n[2], n[3]]
}

/// The sender's and receiver's ports of flow `f`: 49152 + f mod 16384, and 49152 plus the
/// next 14 bits (so `f = (receiver port - 49152) * 16384 + sender port - 49152`).
pub fn flow_ports(f: u32) -> (u16, u16) {
    let a = FIRST_PORT + f % PORTS;
    let b = FIRST_PORT + (f / PORTS) % PORTS;
    (a as u16, b as u16)
}

/// Writes the headers of `pkt` into `buf`: returns the bytes captured and the length of the
/// Ethernet frame (without its check sequence).
fn frame(pkt: &Packet, flows: &Flows, net: &Network, buf: &mut [u8; 64]) -> (usize, u32) {
    let (src, dst, header, forward) = if pkt.flow.index() < flows.len() {
        let spec = flows.spec(pkt.flow);
        let forward = pkt.dst == spec.dst;
        let (s, d) = if forward {
            (spec.src, spec.dst)
        } else {
            (spec.dst, spec.src)
        };
        (
            s,
            d,
            flows.transport_of(pkt.flow).trace_header(pkt),
            forward,
        )
    } else {
        // No flow (Fastpass's control protocol): the sender is where the route starts.
        let src = (pkt.route != RouteId::NONE)
            .then(|| net.port(net.path(pkt.route)[0]).from_host())
            .flatten()
            .unwrap_or(HostId(u32::MAX));
        (src, pkt.dst, TraceHeader::Udp, true)
    };
    let (a, b) = flow_ports(pkt.flow.0);
    let (sport, dport) = if forward { (a, b) } else { (b, a) };
    let (proto, l4_len) = match header {
        TraceHeader::Tcp(v) => (IpNumber::TCP, TcpHeader::MIN_LEN as u32 + v.payload_bytes),
        // The IP packet of a frame of `wire_bytes` (a minimum frame holds 46 bytes).
        TraceHeader::Udp => (
            IpNumber::UDP,
            u32::from(pkt.wire_bytes).max(wire::MIN_WIRE_BYTES) - wire::FRAMING_BYTES - 20,
        ),
    };
    let l4_len = l4_len.min(u32::from(u16::MAX) - 20) as u16;
    let mut ip = Ipv4Header::new(l4_len, 64, proto, host_ip(src), host_ip(dst))
        .expect("length capped above");
    ip.ecn = match pkt.ip.ecn() {
        Ecn::NotEct => IpEcn::NotEct,
        Ecn::Ect => IpEcn::Ect0,
        Ecn::Ce => IpEcn::CongestionExperienced,
    };
    if pkt.ip.ein() {
        // Pulser's explicit incast notification: DSCP 1, a code point with no standard use.
        ip.dscp = IpDscp::try_new(1).expect("DSCP 1 is valid");
    }
    ip.header_checksum = ip.calc_header_checksum();
    let eth = Ethernet2Header {
        source: host_mac(src),
        destination: host_mac(dst),
        ether_type: EtherType::IPV4,
    };
    let mut w: &mut [u8] = &mut buf[..];
    let fits = "64 bytes hold the headers";
    eth.write(&mut w).expect(fits);
    ip.write(&mut w).expect(fits);
    match header {
        TraceHeader::Tcp(v) => {
            let mut t = TcpHeader::new(sport, dport, v.seq, v.window);
            t.acknowledgment_number = v.ack;
            t.fin = v.flags & TcpView::FIN != 0;
            t.syn = v.flags & TcpView::SYN != 0;
            t.ack = v.flags & TcpView::ACK != 0;
            t.ece = v.flags & TcpView::ECE != 0;
            t.cwr = v.flags & TcpView::CWR != 0;
            t.ns = v.flags & TcpView::EIN_ECHO != 0;
            t.write(&mut w).expect(fits);
        }
        TraceHeader::Udp => {
            // Checksum 0: none (RFC 768); the payload is not in the trace.
            let u = UdpHeader {
                source_port: sport,
                destination_port: dport,
                length: l4_len,
                checksum: 0,
            };
            u.write(&mut w).expect(fits);
            let class = match pkt.class {
                Class::Data => 0u8,
                Class::Control => 1,
                Class::Credit => 2,
            };
            let mut g = [0u8; UDP_HEADER_BYTES];
            g[0] = class;
            g[1] = pkt.flags;
            g[2..6].copy_from_slice(&pkt.flow.0.to_be_bytes());
            g[6..10].copy_from_slice(&(pkt.seq as u32).to_be_bytes());
            g[10..14].copy_from_slice(&(pkt.ack as u32).to_be_bytes());
            g[14..18].copy_from_slice(&u32::from(pkt.payload_bytes).to_be_bytes());
            io::Write::write_all(&mut w, &g).expect(fits);
        }
    }
    let headers = 64 - w.len();
    // A frame below Ethernet's minimum of 60 bytes (without the FCS) is padded with zeros,
    // which the trace keeps; of a longer frame it keeps the headers.
    let orig_len = (14 + u32::from(ip.total_len)).max(60);
    let caplen = if orig_len <= 60 {
        orig_len as usize
    } else {
        headers
    };
    if caplen > headers {
        buf[headers..caplen].fill(0);
    }
    (caplen, orig_len)
}
