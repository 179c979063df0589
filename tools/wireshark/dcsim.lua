-- Wireshark/tshark dissector for the UDP header of dcsim's packet traces (docs/trace.md).
-- Every transport that is not TCP (ExpressPass, Ideal, Fastpass) appears in a trace as UDP
-- on ports 49152-65535 with an 18-byte header. Load it with
--   tshark -X lua_script:tools/wireshark/dcsim.lua -r trace-h0.pcap
-- or copy it into Wireshark's personal plugins folder.

local p = Proto("dcsim", "dcsim simulated transport")

local classes = { [0] = "data", [1] = "control", [2] = "credit" }

local f_class = ProtoField.uint8("dcsim.class", "Class", base.DEC, classes)
local f_flags = ProtoField.uint8("dcsim.flags", "Transport flags", base.HEX)
local f_flow = ProtoField.uint32("dcsim.flow", "Flow", base.DEC)
local f_seq = ProtoField.uint32("dcsim.seq", "Sequence (low 32 bits)", base.DEC)
local f_ack = ProtoField.uint32("dcsim.ack", "Acknowledgement (low 32 bits)", base.DEC)
local f_payload = ProtoField.uint32("dcsim.payload", "Payload bytes", base.DEC)
p.fields = { f_class, f_flags, f_flow, f_seq, f_ack, f_payload }

-- ExpressPass's flag byte (crates/dcsim-transport/src/xpass/mod.rs).
local xpass = { [8] = "request", [16] = "stop", [32] = "credit", [64] = "data", [128] = "nack" }

function p.dissector(buf, pinfo, tree)
    if buf:len() < 18 then
        return 0
    end
    pinfo.cols.protocol = "dcsim"
    local t = tree:add(p, buf(0, 18))
    t:add(f_class, buf(0, 1))
    local flags = buf(1, 1):uint()
    local ft = t:add(f_flags, buf(1, 1))
    if xpass[flags] then
        ft:append_text(" (ExpressPass " .. xpass[flags] .. ")")
    end
    t:add(f_flow, buf(2, 4))
    t:add(f_seq, buf(6, 4))
    t:add(f_ack, buf(10, 4))
    t:add(f_payload, buf(14, 4))
    local class = classes[buf(0, 1):uint()] or "?"
    local what = xpass[flags] or class
    pinfo.cols.info = string.format("flow %d %s seq=%d ack=%d", buf(2, 4):uint(), what,
        buf(6, 4):uint(), buf(10, 4):uint())
    return 18
end

DissectorTable.get("udp.port"):add("49152-65535", p)
