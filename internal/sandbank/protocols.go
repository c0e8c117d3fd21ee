package sandbank

import (
	"slices"

	"github.com/kifpool/kifpool/internal/sandbank/mellat"
	"github.com/kifpool/kifpool/internal/sandbank/protocol"
	"github.com/kifpool/kifpool/internal/sandbank/sep"
	"github.com/kifpool/kifpool/internal/sandbank/zarinpal"
	"github.com/kifpool/kifpool/internal/sandbank/zibal"
)

// ProtocolZarinpalV4 is Zarinpal's REST v4 API and StartPay page.
const ProtocolZarinpalV4 = zarinpal.Protocol

// ProtocolZibal is Zibal's IPG v1 (gateway "zibal").
const ProtocolZibal = zibal.Protocol

// ProtocolSEP is SEP's token flow (gateway "sep").
const ProtocolSEP = sep.Protocol

// ProtocolMellat is Mellat's SOAP service (gateway "mellat").
const ProtocolMellat = mellat.Protocol

// protocols is the one list of the protocols the bank imitates, built
// with env: their routes, operations and rules all come from here. A
// gateway driver names its imitation in gateway.Driver.Sandbox.Protocol;
// adding a gateway adds its protocol's package and its line here.
func protocols(env protocol.Env) []protocol.Protocol {
	return []protocol.Protocol{zarinpal.New(env), zibal.New(env), sep.New(env), mellat.New(env)}
}

// Protocols are the names of the gateway protocols the sandbox bank
// imitates.
func Protocols() []string {
	var out []string
	for _, p := range protocols(protocol.Env{}) {
		out = append(out, p.Name())
	}
	return out
}

// Speaks reports whether the bank imitates protocol.
func Speaks(protocol string) bool { return slices.Contains(Protocols(), protocol) }
