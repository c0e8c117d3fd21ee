package iban

// Bank is an Iranian bank or credit institution as a Sheba names it.
type Bank struct {
	Code string // the three digits of the Sheba (characters 5 to 7)
	FA   string // its name in Persian
	EN   string // its name in English
}

// Name is the bank's name in the language lang ("fa" or "en"; Persian
// for any other).
func (b Bank) Name(lang string) string {
	if lang == "en" {
		return b.EN
	}
	return b.FA
}

// banks are the codes the Central Bank gave the banks and credit
// institutions (a Sheba's characters 5 to 7). Banks that merged into
// another keep their code: their customers' Shebas still name it.
var banks = []Bank{
	{"010", "بانک مرکزی جمهوری اسلامی ایران", "Central Bank of Iran"},
	{"011", "بانک صنعت و معدن", "Sanat o Madan Bank"},
	{"012", "بانک ملت", "Bank Mellat"},
	{"013", "بانک رفاه کارگران", "Refah Kargaran Bank"},
	{"014", "بانک مسکن", "Bank Maskan"},
	{"015", "بانک سپه", "Bank Sepah"},
	{"016", "بانک کشاورزی", "Bank Keshavarzi"},
	{"017", "بانک ملی ایران", "Bank Melli Iran"},
	{"018", "بانک تجارت", "Tejarat Bank"},
	{"019", "بانک صادرات ایران", "Bank Saderat Iran"},
	{"020", "بانک توسعه صادرات", "Export Development Bank"},
	{"021", "پست بانک ایران", "Post Bank of Iran"},
	{"022", "بانک توسعه تعاون", "Tose'e Ta'avon Bank"},
	{"051", "موسسه اعتباری توسعه", "Tose'e Credit Institution"},
	{"052", "بانک قوامین", "Ghavamin Bank"},
	{"053", "بانک کارآفرین", "Karafarin Bank"},
	{"054", "بانک پارسیان", "Parsian Bank"},
	{"055", "بانک اقتصاد نوین", "Eghtesad Novin Bank"},
	{"056", "بانک سامان", "Saman Bank"},
	{"057", "بانک پاسارگاد", "Bank Pasargad"},
	{"058", "بانک سرمایه", "Sarmayeh Bank"},
	{"059", "بانک سینا", "Sina Bank"},
	{"060", "بانک قرض\u200cالحسنه مهر ایران", "Mehr Iran Bank"},
	{"061", "بانک شهر", "City Bank (Shahr)"},
	{"062", "بانک آینده", "Ayandeh Bank"},
	{"063", "بانک انصار", "Ansar Bank"},
	{"064", "بانک گردشگری", "Tourism Bank (Gardeshgari)"},
	{"065", "بانک حکمت ایرانیان", "Hekmat Iranian Bank"},
	{"066", "بانک دی", "Day Bank"},
	{"069", "بانک ایران زمین", "Iran Zamin Bank"},
	{"070", "بانک قرض\u200cالحسنه رسالت", "Resalat Bank"},
	{"073", "موسسه اعتباری کوثر", "Kosar Credit Institution"},
	{"075", "موسسه اعتباری ملل", "Melal Credit Institution"},
	{"078", "بانک خاورمیانه", "Middle East Bank"},
	{"079", "بانک مهر اقتصاد", "Mehr Eghtesad Bank"},
	{"080", "موسسه اعتباری نور", "Noor Credit Institution"},
	{"090", "بانک مهر ایران", "Mehr Iran Bank"},
	{"095", "بانک ایران و ونزوئلا", "Iran-Venezuela Bank"},
}

// BankByCode is the bank of a three-digit code.
func BankByCode(code string) (Bank, bool) {
	for _, b := range banks {
		if b.Code == code {
			return b, true
		}
	}
	return Bank{}, false
}

// Banks lists every bank the table knows, by code.
func Banks() []Bank { return append([]Bank(nil), banks...) }
