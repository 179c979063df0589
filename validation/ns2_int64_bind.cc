// The two 64-bit instance-variable bindings of TclObject that ns-2 links against and that
// Debian's libtclcl (built without HAVE_INT64) leaves out. Written for dcsim's validation
// build of the ExpressPass authors' ns-2 (validation/xpass_ns2.py): each binding is a plain
// Tcl variable trace that reads and writes the C++ value, and a bound variable takes its
// class default as every other binding does.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

namespace {

char* int64_trace(ClientData data, Tcl_Interp* interp, CONST84 char* n1, CONST84 char* n2,
                  int flags) {
	int64_t* val = static_cast<int64_t*>(data);
	if (flags & TCL_TRACE_WRITES) {
		const char* s = Tcl_GetVar2(interp, n1, n2, 0);
		if (s != 0)
			*val = strtoll(s, 0, 0);
	} else if (flags & TCL_TRACE_READS) {
		char text[32];
		snprintf(text, sizeof text, "%lld", static_cast<long long>(*val));
		Tcl_SetVar2(interp, n1, n2, text, 0);
	}
	return 0;
}

void trace_int64(const char* name, int64_t* val) {
	Tcl_TraceVar(Tcl::instance().interp(), const_cast<char*>(name),
	             TCL_TRACE_READS | TCL_TRACE_WRITES,
	             reinterpret_cast<Tcl_VarTraceProc*>(int64_trace), val);
}

}  // namespace

void TclObject::bind(const char* var, int64_t* val) {
	create_instvar(var);
	trace_int64(var, val);
	Tcl::instance().evalf("$self init-instvar %s", var);
}

bool TclObject::delay_bind(const char* varName, const char* localName, const char* thisVarName,
                           int64_t* val, TclObject* tracer) {
	if (strcmp(varName, thisVarName) != 0)
		return false;
	if (tracer)
		not_a_TracedVar(thisVarName);
	if (create_framevar(localName) != TCL_OK)
		abort();
	trace_int64(localName, val);
	return true;
}
