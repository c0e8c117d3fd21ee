package sandbank

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Mellat (Behpardakht) SOAP service, at Mellat's own paths:
//
//	POST /pgwchannel/services/pgw                 SOAP 1.1 (namespace http://interfaces.core.sw.bps.com/):
//	                                              bpPayRequest, bpVerifyRequest, bpSettleRequest,
//	                                              bpInquiryRequest, bpReversalRequest
//	GET  /pgwchannel/services/pgw?wsdl            the service's WSDL (its address: the URL it was fetched at)
//	POST /pgwchannel/startpay.mellat              payer's page (form field RefId)
//	POST /pgwchannel/startpay.mellat/pay|cancel   its buttons (form field RefId)
//
// The payer is posted back with RefId, ResCode, SaleOrderId,
// SaleReferenceId, CardHolderPan, CardHolderInfo, FinalAmount. A sale not
// verified within 20 minutes of being paid is reversed.

// The Mellat operations (fault keys: FaultOps).
const (
	opMellatRequest   = "mellat-request"
	opMellatVerify    = "mellat-verify"
	opMellatSettle    = "mellat-settle"
	opMellatInquiry   = "mellat-inquiry"
	opMellatReversal  = "mellat-reversal"
	opMellatStart     = "mellat-startpay"
	opMellatPagePay   = "mellat-startpay.pay"
	opMellatPageCanc  = "mellat-startpay.cancel"
	mellatVerifyLimit = 20 * time.Minute
	mellatReverseLim  = 3 * time.Hour
	mellatNS          = "http://interfaces.core.sw.bps.com/"
)

// Mellat result codes the bank answers.
const (
	mlOK              = "0"
	mlCancelled       = "17"
	mlBadMerchant     = "21"
	mlBadCredentials  = "24"
	mlBadAmount       = "25"
	mlDuplicateOrder  = "41"
	mlSaleNotFound    = "42"
	mlAlreadyVerified = "43"
	mlVerifyNotFound  = "44"
	mlAlreadySettled  = "45"
	mlReversed        = "48"
)

// mellatMethods maps a SOAP method to its operation.
var mellatMethods = map[string]string{
	"bpPayRequest":      opMellatRequest,
	"bpVerifyRequest":   opMellatVerify,
	"bpSettleRequest":   opMellatSettle,
	"bpInquiryRequest":  opMellatInquiry,
	"bpReversalRequest": opMellatReversal,
}

func (b *Bank) mellatRoutes(mux *http.ServeMux, op func(string) http.HandlerFunc) {
	mux.HandleFunc("/pgwchannel/services/pgw", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Query().Has("wsdl") {
			w.Header().Set("Content-Type", "text/xml; charset=utf-8")
			_, _ = io.WriteString(w, mellatWSDLAt(serviceURL(r)))
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			soapFault(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		bufferBody(r)
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		method, _, err := readSOAP(raw)
		name, ok := mellatMethods[method]
		if err != nil || !ok {
			soapFault(w, http.StatusInternalServerError, fmt.Sprintf("unknown or malformed call %q", method))
			return
		}
		op(name)(w, r)
	})
	mux.Handle("POST /pgwchannel/startpay.mellat", op(opMellatStart))
	mux.Handle("POST /pgwchannel/enstartpay.mellat", op(opMellatStart))
	mux.Handle("POST /pgwchannel/startpay.mellat/pay", op(opMellatPagePay))
	mux.Handle("POST /pgwchannel/startpay.mellat/cancel", op(opMellatPageCanc))
}

// serveMellat performs one Mellat operation (through the fault layer).
func (b *Bank) serveMellat(op string, w http.ResponseWriter, r *http.Request) bool {
	switch op {
	case opMellatRequest, opMellatVerify, opMellatSettle, opMellatInquiry, opMellatReversal:
		raw, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		method, f, err := readSOAP(raw)
		if err != nil {
			soapFault(w, http.StatusInternalServerError, err.Error())
			return true
		}
		var ret string
		if op == opMellatRequest {
			ret = b.mellatPay(f)
		} else {
			ret = b.mellatSale(op, f)
		}
		soapReturn(w, method, ret)
	case opMellatStart:
		b.pageFormStart(w, r, gatewayMellat, r.PostFormValue("RefId"), "RefId", "startpay.mellat/")
	case opMellatPagePay:
		b.pageFormAction(w, r, "RefId", StatePaid)
	case opMellatPageCanc:
		b.pageFormAction(w, r, "RefId", StateFailed)
	default:
		return false
	}
	return true
}

// mellatPay is bpPayRequest: "0,RefId" or a code.
func (b *Bank) mellatPay(f map[string]string) string {
	terminal, user, pass := f["terminalId"], f["userName"], f["userPassword"]
	order, errO := strconv.ParseInt(f["orderId"], 10, 64)
	amount, errA := strconv.ParseInt(f["amount"], 10, 64)
	switch {
	case !digits(terminal) || terminal == "0":
		return mlBadMerchant
	case user == "" || pass == "":
		return mlBadCredentials
	case errA != nil || amount < minAmountRials || amount > maxAmountRials:
		return mlBadAmount
	case errO != nil || order <= 0:
		return "31" // invalid answer / field
	case len(f["localDate"]) != 8 || !digits(f["localDate"]) || !mellatLocalTime(f["localTime"]):
		return "31"
	}
	if msg := b.checkCallback(f["callBackUrl"]); msg != "" {
		return mlBadMerchant
	}
	b.mu.Lock()
	key := terminal + "/" + strconv.FormatInt(order, 10)
	_, dup := b.orders[key]
	b.mu.Unlock()
	if dup {
		return mlDuplicateOrder
	}
	rec, err := b.newRecord(gatewayMellat, terminal, amount, f["callBackUrl"], strconv.FormatInt(order, 10), 20)
	if err != nil {
		b.log.Error("sandbank: mellat pay request", "err", err)
		return "34" // system error
	}
	b.mu.Lock()
	rec.OrderNumber, rec.user, rec.pass, rec.Description = order, user, pass, f["additionalData"]
	b.orders[key] = rec
	b.mu.Unlock()
	b.log.Info("sandbank: mellat pay request", "ref_id", rec.Authority, "amount", amount, "order", order)
	return "0," + rec.Authority
}

// mellatLocalTime reports whether t can be the payer's local time of a
// pay request: HHMMSS, or its digits unpadded. The document asks for
// HHMMSS, but mellat-checkout (0.4.0, in use against the real bank for
// years) sends `${h}${m}${s}` without zero-padding, "953" at 09:05:03;
// nothing says the bank refuses that, so neither does the sandbox.
func mellatLocalTime(t string) bool {
	return len(t) >= 1 && len(t) <= 6 && digits(t)
}

// mellatSale is verify, settle, inquiry or reversal of a sale.
func (b *Bank) mellatSale(op string, f map[string]string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	rec, ok := b.receipts[f["saleReferenceId"]]
	if !ok || rec.Gateway != gatewayMellat || rec.MerchantID != f["terminalId"] ||
		strconv.FormatInt(rec.OrderNumber, 10) != f["saleOrderId"] {
		return mlSaleNotFound
	}
	if rec.user != f["userName"] || rec.pass != f["userPassword"] {
		return mlBadCredentials
	}
	now := b.clock()
	b.expireLocked(rec, now)
	switch op {
	case opMellatVerify:
		rec.VerifyCount++
		switch rec.State {
		case StatePaid:
			rec.State, rec.VerifiedAt = StateVerified, now
			b.log.Info("sandbank: mellat verified", "ref_id", rec.Authority)
			return mlOK
		case StateVerified:
			return mlAlreadyVerified
		case StateReversed:
			return mlReversed
		}
		return mlCancelled
	case opMellatSettle:
		rec.SettleCount++
		switch {
		case rec.State == StateVerified && rec.SettledAt.IsZero():
			rec.SettledAt = now
			b.log.Info("sandbank: mellat settled", "ref_id", rec.Authority)
			return mlOK
		case rec.State == StateVerified:
			return mlAlreadySettled
		case rec.State == StateReversed:
			return mlReversed
		}
		return mlVerifyNotFound
	case opMellatInquiry:
		switch rec.State {
		case StateVerified:
			return mlOK
		case StateReversed:
			return mlReversed
		case StatePaid:
			return mlVerifyNotFound
		}
		return mlCancelled
	case opMellatReversal:
		switch {
		case rec.State == StateVerified && rec.SettledAt.IsZero() && now.Sub(rec.VerifiedAt) < mellatReverseLim:
			rec.State, rec.ReversedAt = StateReversed, now
			return mlOK
		case rec.State == StateReversed:
			return mlReversed
		case !rec.SettledAt.IsZero():
			return mlAlreadySettled
		}
		return mlVerifyNotFound
	}
	return mlSaleNotFound
}

// mellatCallback is the POST back to the merchant of a finished sale.
func mellatCallback(rec *record) CallbackRequest {
	code, ref, pan, final := mlCancelled, "", "", ""
	if rec.State == StatePaid || rec.State == StateVerified {
		code, ref, pan, final = mlOK, rec.Receipt, rec.CardPAN, strconv.FormatInt(rec.Amount, 10)
	}
	return postCallback(rec.CallbackURL,
		"RefId", rec.Authority, "ResCode", code, "SaleOrderId", strconv.FormatInt(rec.OrderNumber, 10),
		"SaleReferenceId", ref, "CardHolderPan", pan, "CardHolderInfo", "", "FinalAmount", final)
}

// readSOAP reads a SOAP call: the method (the first element in the Body,
// any prefix) and its child elements' texts.
func readSOAP(raw []byte) (string, map[string]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(raw))
	inBody := false
	method := ""
	fields := map[string]string{}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return method, nil, fmt.Errorf("malformed SOAP call: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "Body":
				inBody = true
			case inBody && method == "":
				method = t.Name.Local
			case inBody:
				var v string
				if err := dec.DecodeElement(&v, &t); err != nil {
					return method, nil, fmt.Errorf("malformed field %s: %w", t.Name.Local, err)
				}
				fields[t.Name.Local] = strings.TrimSpace(v)
			}
		case xml.EndElement:
			if t.Name.Local == method {
				return method, fields, nil
			}
		}
	}
	if method == "" {
		return "", nil, errors.New("no call in the SOAP body")
	}
	return method, fields, nil
}

// soapReturn answers a call with its <return> text.
func soapReturn(w http.ResponseWriter, method, ret string) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">` +
		`<soap:Body><ns2:` + method + `Response xmlns:ns2="` + mellatNS + `"><return>`)
	_ = xml.EscapeText(&b, []byte(ret))
	b.WriteString(`</return></ns2:` + method + `Response></soap:Body></soap:Envelope>`)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b.Bytes())
}

// soapFault answers a SOAP fault.
func soapFault(w http.ResponseWriter, status int, msg string) {
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/">` +
		`<soap:Body><soap:Fault><faultcode>soap:Client</faultcode><faultstring>`)
	_ = xml.EscapeText(&b, []byte(msg))
	b.WriteString(`</faultstring></soap:Fault></soap:Body></soap:Envelope>`)
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// serviceURL is the absolute URL the request was sent to, without its
// query: the bank's own address as the client reached it, mount prefix
// (the app's /sandbank) included.
func serviceURL(r *http.Request) string {
	path := r.URL.EscapedPath()
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && u.Path != "" {
		path = u.EscapedPath() // before http.StripPrefix took the prefix off
	}
	return originOf(r) + path
}

// mellatWSDLAt is the WSDL with the service at location. Like Mellat's own
// (whose soap:address is https://bpm.shaparak.ir:443/pgwchannel/services/pgw)
// it names an absolute address: SOAP clients built from a WSDL, such as
// node-soap under mellat-checkout, send their calls there and cannot
// resolve a relative one.
func mellatWSDLAt(location string) string {
	var esc strings.Builder
	_ = xml.EscapeText(&esc, []byte(location))
	return strings.Replace(mellatWSDL, mellatLocation, esc.String(), 1)
}

// mellatLocation stands in mellatWSDL for the service's address.
const mellatLocation = "{{location}}"

// mellatWSDL describes the five operations (RPC/literal, unqualified
// parts), enough for a SOAP client generated from it; mellatWSDLAt puts
// in the service's address.
var mellatWSDL = func() string {
	type part struct{ name, typ string }
	sale := []part{{"terminalId", "long"}, {"userName", "string"}, {"userPassword", "string"},
		{"orderId", "long"}, {"saleOrderId", "long"}, {"saleReferenceId", "long"}}
	ops := []struct {
		name  string
		parts []part
	}{
		{"bpPayRequest", []part{{"terminalId", "long"}, {"userName", "string"}, {"userPassword", "string"}, {"orderId", "long"},
			{"amount", "long"}, {"localDate", "string"}, {"localTime", "string"}, {"additionalData", "string"},
			{"callBackUrl", "string"}, {"payerId", "long"}}},
		{"bpVerifyRequest", sale}, {"bpSettleRequest", sale}, {"bpInquiryRequest", sale}, {"bpReversalRequest", sale},
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<definitions name="PaymentGatewayImplService" targetNamespace="` + mellatNS + `" xmlns="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:tns="` + mellatNS + `" xmlns:xsd="http://www.w3.org/2001/XMLSchema">
`)
	for _, o := range ops {
		b.WriteString(`<message name="` + o.name + `">`)
		for _, p := range o.parts {
			b.WriteString(`<part name="` + p.name + `" type="xsd:` + p.typ + `"/>`)
		}
		b.WriteString("</message>\n<message name=\"" + o.name + `Response"><part name="return" type="xsd:string"/></message>` + "\n")
	}
	b.WriteString(`<portType name="IPaymentGateway">`)
	for _, o := range ops {
		b.WriteString(`<operation name="` + o.name + `"><input message="tns:` + o.name + `"/><output message="tns:` + o.name + `Response"/></operation>`)
	}
	b.WriteString("</portType>\n" + `<binding name="PaymentGatewayImplServiceSoapBinding" type="tns:IPaymentGateway"><soap:binding style="rpc" transport="http://schemas.xmlsoap.org/soap/http"/>`)
	for _, o := range ops {
		b.WriteString(`<operation name="` + o.name + `"><soap:operation soapAction=""/><input><soap:body use="literal" namespace="` + mellatNS +
			`"/></input><output><soap:body use="literal" namespace="` + mellatNS + `"/></output></operation>`)
	}
	b.WriteString("</binding>\n" + `<service name="PaymentGatewayImplService"><port name="PaymentGatewayImplPort" binding="tns:PaymentGatewayImplServiceSoapBinding"><soap:address location="` + mellatLocation + `"/></port></service>
</definitions>
`)
	return b.String()
}()

// readSOAPReturn reads the bank's own answer: the response element and
// its <return> text.
func readSOAPReturn(raw []byte) (string, string, error) {
	method, f, err := readSOAP(raw)
	return method, f["return"], err
}
