"""The phrases the behaviour rules look for, by what they mean (science.md §3).

Each pattern is matched against one sentence of a reply's prose (reasoning,
fenced code and quoted text already removed) and stands for a meaning, not
one wording: "I say I cannot do this" (``REFUSAL``), "I ask you for a value"
(``ASKS``), "this question asks for nothing missing" (``PLEASANTRY``,
``SUGGESTION``, offers). English patterns follow the grammar of the meaning
(a first-person modal with a negation, a tool set that lacks something)
so that new wordings of it match too; the other languages models answer in
(Spanish, Portuguese, French, Italian, German, Russian, Chinese, Japanese,
Korean) get their common forms of the same meanings.
"""

from __future__ import annotations

import re

_I = re.IGNORECASE


def _any(*parts: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{part})" for part in parts), _I)


# -- the first person saying it cannot -------------------------------------------

# Adverbs and hedges that sit between "I" and the negation: "I'm currently
# unable", "I really can't", "I'm afraid I don't have".
_HEDGE = r"(?:\s+(?:\w+ly|just|still|also|even|afraid|sorry|simply|now|here|yet))*"
_NEGATED_MODAL = (
    r"(?:can't|cannot|can not|couldn't|could not|won't be able|will not be able|am not able|"
    r"'m not able|am unable|'m unable)"
)
# "I can't stress/believe/wait/help but ..." are figures of speech, not limits.
# "I can't be 100% certain, but ..." hedges an answer it then gives.
_NOT_A_LIMIT = (
    r"(?!\s+(?:recommend|stress|emphasi[sz]e|wait|believe|thank|help but|agree more|guarantee|"
    r"promise|vouch|be (?:\d+ ?% |completely |entirely |absolutely |totally |fully |quite |too )?"
    r"(?:sure|certain|positive|confident)|say (?:for sure|for certain|with (?:certainty|"
    r"confidence))|rule out)\b)"
)
# What an assistant says it lacks.
_LACKED = (
    r"(?:access|the (?:ability|capability|capacity|means|tools?|functions?|option|permissions?)|"
    # "a tool", "a package-tracking tool", "an email integration".
    r"an? (?:[\w-]+ ){0,3}(?:tool|function|api|integration|plugin|connector|way|means)|"
    r"any (?:\w+ )?(?:tools?|functions?|apis?|way|means|access)|"
    r"tools|functions|real-time|realtime|live|current|internet|web|browsing|information|data|"
    r"the necessary|the required|the right|permission|(?:a |any )?(?:direct )?connection)"
)
_ENGLISH_FIRST_PERSON = (
    rf"\bI(?:'m| am){_HEDGE}\s+(?:not (?:able|equipped|capable|designed|built|set up|"
    rf"programmed|permitted|allowed|authori[sz]ed|connected)|unable|incapable)\b",
    rf"\bI{_HEDGE}\s+(?:can't|cannot|can not|couldn't|could not|won't be able|"
    rf"will not be able){_NOT_A_LIMIT}\b",
    rf"\bI{_HEDGE}\s+(?:don't|do not|didn't|did not){_HEDGE}\s+have{_HEDGE}\s+{_LACKED}\b",
    rf"\bI{_HEDGE}\s+(?:lack|have no|possess no)\b",
    r"\bI(?:'m| am) not in a position to\b",
    r"\bI(?:'ll| will| must| have to|'d have to) (?:have to )?(?:pass on|decline)\b",
    r"\bI (?:don't|do not) know\b(?! (?:if|whether|why|how|what|which|who|where|when)\b)",
    r"\bI(?:'d| would)? need (?:a|an|the) (?:[\w-]+ ){0,3}(?:tool|api|endpoint|service)\b",
    # The subject left out: "Unable to comply: no suitable tool.", "Can't do that, sorry."
    # As a question it is the user's state: "Unable to sleep? Try ...".
    r"^(?![^\n]*\?[\s\"')*_]*$)(?:(?:sorry|unfortunately|regrettably|sadly|apologies|alas)"
    r"[,.!:]?\s*)?(?:unable to|"
    r"not able to|(?:can't|cannot|can not) (?:do|help|comply|assist|access|complete|fulfil|"
    r"fulfill|perform|process|provide|check|look|get|retrieve|book|send|reach|browse)\b)",
)
# The tools offered lack what the request needs. A tool word alone is not
# enough ("Python functions don't support overloading" answers a question):
# the tools must be the assistant's own (``_MY_TOOLS``), or said to be absent.
_TOOLS = r"(?:tools?|functions?|apis?|endpoints?|toolset|toolkit|toolbox|capabilit(?:y|ies))"
_MY_TOOLS = (
    rf"(?:(?:\bmy|\b(?:the |these |those )?(?:available|provided|given|offered|current|existing))"
    rf"(?: [\w-]+){{0,2}} {_TOOLS}\b|\b(?:the |these |those )?{_TOOLS} (?:available(?: to me)?|"
    rf"provided|offered|here|in this (?:session|chat|conversation|context|environment)|"
    rf"I (?:have|had|was given|can use|can access|'ve been given|'ve got)|at my disposal|"
    rf"you (?:gave|provided|offered))\b)"
)
# "That's not something I can do", "beyond my capabilities", "not possible for me".
_ENGLISH_IMPERSONAL = (
    # "That's not something I can do", "not a service I can provide", "not a task my tools can".
    r"(?:\bnot|n't) (?:something|anything|a|an|one)\b(?: [\w'-]+){0,4}? (?:that )?(?:I|we|my|"
    r"the|these|those)(?:'m|'re)?\b(?: [\w'-]+){0,3}? (?:can|could|am able to|are able to|"
    r"able to)\b",
    # The subject said once: "I'm just a text assistant and can't control devices".
    rf"\bI\b.{{0,80}}\b(?:and|so|but|therefore|thus)(?: \w+ly)? (?:can't|cannot|can not|"
    rf"couldn't|won't be able to|am unable to|am not able to|have no way to){_NOT_A_LIMIT}\b",
    rf"(?:\bnot|n't) (?:possible|feasible|doable) (?:for me|with (?:my\b|what I have\b|"
    rf"{_MY_TOOLS}))",
    r"\b(?:beyond|outside|not within|not among|not part of)(?: of)? (?:my|the scope of my|"
    r"what I)\b",
    r"\b(?:can't|cannot|can not|couldn't|could not) be (?:done|completed|fulfilled|handled|"
    r"answered|performed|provided)\b.{0,30}\b(?:tools?|functions?|with what I have|here)\b",
    r"\bno way (?:for me )?to\b",
    r"\b(?:is|are)(?:n't| not) (?:available|accessible|possible|supported|offered) (?:to|for) me\b",
    r"\bat my disposal\b.{0,40}\b(?:no|none|not|n't)\b|"
    r"\b(?:no|none|not|n't)\b.{0,40}\bat my disposal\b",
)
_TOOLSET = (
    # "No tool/function can ...", "none of the available functions", "neither of the tools".
    rf"\b(?:no|none of (?:the|my|these|those)|neither of (?:the|my|these)|not any of (?:the|my)|"
    rf"no one of (?:the|my))(?: [\w-]+){{0,3}} {_TOOLS}\b.{{0,50}}\b(?:can|could|for|to|that|"
    rf"lets?|allows?|supports?|handles?|covers?|deals?|is|are|available|here)\b",
    # "No suitable tool.", "no relevant function available".
    rf"\bno (?:suitable|appropriate|relevant|matching|applicable|such|fitting) (?:[\w-]+ )?"
    rf"{_TOOLS}\b",
    # "There isn't a tool for that", "there are no functions here that ...".
    rf"\bthere(?: is|'s| are)(?:n't| not| no)(?: any| a| an| one)?(?: [\w-]+){{0,3}} {_TOOLS}"
    rf"(?: (?:here|available|offered|provided|at my disposal|among|I can|for|to|that|which))\b",
    # "The provided functions don't support ...", "the function I have cannot be used to ...".
    rf"{_MY_TOOLS}(?: [\w'-]+){{0,6}}? (?:don't|do not|doesn't|does not|can't|cannot|can not|"
    rf"won't|will not|aren't|are not|isn't|is not)(?: \w+ly)? (?:support|include|cover|allow|"
    rf"provide|offer|handle|let|give|have|do|perform|be used|able|available|designed|meant|"
    rf"capable|equipped|suitable|relevant|related|intended|for)\b",
    # "isn't supported by any of my functions", "isn't possible with the functions I have".
    rf"\b(?:is|are)?(?:n't| not) (?:supported|covered|handled|possible|available|offered|"
    rf"provided) (?:by|with|through|in|among) (?:any of )?(?:{_MY_TOOLS}|my\b|what I have\b)",
    # "The tools available to me only cover weather", "the only tool I have retrieves tokens".
    rf"{_MY_TOOLS}(?: [\w'-]+){{0,5}}? (?:only|limited to|restricted to)\b|"
    rf"\bthe only {_TOOLS} (?:available|provided|offered|here|at my|I)\b|"
    rf"\bI (?:\w+ly )?only have (?:access to )?(?:a |an |one |the )?(?:[\w-]+ ){{0,3}}{_TOOLS}\b",
    # "The weather tool isn't available", "a booking API is not offered".
    rf"\b{_TOOLS} (?:[\w-]+ ){{0,3}}(?:is|are)(?:n't| not) (?:available|offered|provided|"
    rf"included)",
)
# The same meanings in the other languages models answer in. Impersonal forms
# ("no es posible", "できません" alone) also state facts in answers, so they
# count only with the first person or an apology.
_OTHER_LANGUAGES = (
    # Spanish, Portuguese, Italian: "no puedo", "no tengo acceso", "não consigo", "non posso".
    r"\bno (?:puedo|pude|podré|podría|tengo|dispongo|cuento con|me es posible|soy capaz|"
    r"estoy en condiciones)\b",
    r"\bn[ãa]o (?:consigo|posso|poderei|tenho|sou capaz)\b",
    r"\bnon (?:posso|riesco|ho (?:accesso|a disposizione|strumenti)|sono in grado)\b",
    # French: "je ne peux pas", "je n'ai pas accès", "il m'est impossible".
    r"\bje ne (?:peux|pourrai|pourrais|suis pas en mesure|dispose|sais pas)\b|\bje n'ai (?:pas|"
    r"aucun|aucune)\b|\bimpossible pour moi\b|\bil m'est impossible\b|\bje suis incapable\b",
    # German: "ich kann keine/nicht", "das kann ich leider nicht", "habe ich keinen Zugriff".
    r"\bich (?:kann|konnte|darf)(?: \w+){0,3} (?:nicht|keine|keinen|kein)\b|"
    r"\b(?:kann|konnte|darf) ich(?: \w+){0,3} (?:nicht|keine|keinen|kein)\b|"
    r"\b(?:ich habe|habe ich)(?: \w+){0,2} (?:keine|keinen|kein|nicht)\b|\bmir nicht möglich\b|"
    r"\bkein(?:e|en)? (?:\w+ )?(?:Werkzeug|Tool|Funktion|Zugriff|Zugang)",
    # Russian: "не могу", "у меня нет доступа", "не имею".
    r"не (?:могу|смогу|имею|в состоянии)|у меня нет",
    # Chinese: "我无法", "我不能", "我没有……工具".
    r"我(?:目前|现在|暂时|还|并)?(?:无法|不能|没法|没有办法|做不到|不具备)|"
    r"没有[^。！？，,]{0,15}(?:工具|权限|能力|功能|接口|访问|途径)|无法(?:获取|访问|查询|提供|连接|"
    r"完成|执行|预订|帮)",
    # Japanese: "申し訳ありませんが……できません", "ツールがありません", "アクセスできません".
    r"(?:申し訳|すみません|恐れ入り|残念|私は|私には)[^。]*(?:でき|出来)(?:ません|ない)|"
    r"(?:アクセス|提供|取得|実行|送信|予約|お答え|お手伝い|対応)(?:することは|は)?(?:でき|出来)"
    r"(?:ません|ない)|(?:ツール|機能|権限|アクセス|手段|方法|API)(?:が|は)(?:ありません|ない|"
    r"ございません)",
    # Korean: "죄송하지만 …할 수 없습니다", "도구가 없습니다".
    r"(?:죄송|제가|저는)[^.]*수 없|(?:도구|기능|권한|접근)(?:이|가|은|는) 없",
    # Thai: "ผมไม่สามารถ…", "ขออภัย … ไม่สามารถ", "ไม่มีเครื่องมือ" (no tool). Thai has no
    # word spaces, so these are substrings; "ไม่สามารถ" alone also states facts.
    r"(?:ผม|ฉัน|ดิฉัน|เรา|ขออภัย|ขอโทษ|เสียใจ)[^\n.!?]{0,60}?(?:ไม่สามารถ|ทำไม่ได้|ไม่มี(?:สิทธิ์|"
    r"การเข้าถึง|ความสามารถ|เครื่องมือ))|ไม่มีเครื่องมือ",
    # Hindi: "मैं … नहीं कर सकता", "मेरे पास … नहीं है", "असमर्थ", "कोई टूल नहीं".
    r"(?:मैं|मुझसे|हम|माफ़|माफ|क्षमा)[^\n।]{0,80}?नहीं (?:कर |दे |ले |बता |पा )?(?:सकता|सकती|सकते|"
    r"पाऊँगा|पाऊंगा|पाऊँगी|पाऊंगी|पाता|पाती)|मेरे पास[^\n।]{0,60}?नहीं (?:है|हैं)|असमर्थ|"
    r"कोई (?:टूल|उपकरण|साधन|फ़ंक्शन|फंक्शन) नहीं",
    # Vietnamese: "tôi không thể", "xin lỗi … không thể", "không có công cụ".
    r"\btôi (?:không thể|không có|chưa thể|không được phép|không truy cập)|\b(?:xin lỗi|rất tiếc)\b"
    r"[^\n.]{0,80}?\bkhông (?:thể|có)\b|\bkhông có (?:công cụ|quyền|khả năng|chức năng)\b",
    # Arabic: "لا أستطيع", "لا يمكنني", "ليس لدي", "غير قادر".
    r"لا (?:أستطيع|استطيع|يمكنني|أقدر|أملك|املك)|ليس (?:لدي|لديّ|بإمكاني|بمقدوري)|لا يوجد لدي|"
    r"غير قادر|لا تتوفر لدي",
    # Turkish: "yapamam", "erişemiyorum" (first-person inability), "erişimim yok".
    r"\b\w{2,}(?:[ae]m[ıi]yorum|[ae]mam|[ae]mem)\b|\b(?:erişimim|aracım|yetkim) yok\b",
    # Indonesian and Malay, Polish, Dutch.
    r"\b(?:saya|aku) (?:tidak|tak) (?:bisa|dapat|mampu|memiliki|punya)\b|\bmaaf\b[^\n.]{0,60}?"
    r"\btidak (?:bisa|dapat)\b",
    r"\bnie (?:mogę|jestem w stanie|mam (?:dostępu|narzędzia|możliwości))\b",
    r"\bik (?:kan|heb)(?: \w+){0,3} (?:niet|geen)\b|\b(?:kan|heb) ik(?: \w+){0,3} (?:niet|geen)\b",
)
REFUSAL = _any(*_ENGLISH_FIRST_PERSON, *_ENGLISH_IMPERSONAL, *_TOOLSET, *_OTHER_LANGUAGES)

# -- asking the user for a value --------------------------------------------------

_ENGLISH_ASKS = (
    r"\bplease (?:provide|specify|tell|share|give|let me know|confirm|clarify|send|enter|"
    r"indicate|supply|say|advise|select|choose)\b",
    r"\b(?:could|can|would|will) you (?:please )?(?:provide|specify|tell|share|give|let me know|"
    r"confirm|clarify|send|indicate|supply|say)\b",
    r"\blet me know (?:which|what|where|when|who|how|the|your|whether)\b",
    r"\b(?:once|when|if|as soon as) you (?:tell|give|provide|share|send|confirm)\b",
    r"\byou (?:didn't|did not|haven't|have not|forgot to) (?:mention|specify|say|provide|"
    r"include|tell|give)\b",
    r"\bI(?:'ll| will| would|'d)?(?: first| just| still| also)? need (?:to know\b|you to\b|"
    r"(?:the|your|a few|some|more)\b)",
    # A clarifying question put as a statement: "To proceed, I need to confirm if ...".
    r"\bI(?:'ll| will| would|'d)?(?: first| just| still| also)? (?:need|have|want) to "
    r"(?:confirm|clarify|verify|double-check|check with you)\b",
    r"\bI (?:require|must know|must have|must confirm)\b",
    r"\b(?:just |only |still )?need (?:one|a|two|a few|some) (?:more )?(?:detail|details|"
    r"thing|piece of information|pieces of information|bit of information)\b",
    # "Just need the ZIP code", "All I need is your name".
    r"^(?:just|only|all I) need (?:is )?(?:the|your|a|an|one|two|some)\b",
    r"\bkindly (?:provide|specify|tell|share|give|let me know|confirm|clarify|send)\b",
    r"\bit would help (?:to know|to have|if you)\b",
    r"\b(?:as soon as|once|when|after) I (?:have|get|know|receive) your\b",
    r"^(?:just |simply |now )?(?:tell|give|send|share|provide) me\b",
    r"\bsend (?:it|that|them|those) (?:over|along|to me)\b",
    r"\bmissing from your (?:request|message|query|question)\b",
    r"\b(?:your|the) (?:request|message|query|question) (?:doesn't|does not|didn't|did not) "
    r"(?:include|mention|specify|say|contain|give)\b",
)
_OTHER_ASKS = (
    r"\b(?:por favor,? )?(?:indícame|dime|proporcióname|facilítame|compárteme|especifica)\b|"
    r"\b(?:podrías|puedes|podría usted) (?:decirme|indicarme|darme|proporcionar|confirmar)\b",
    r"\b(?:veuillez|merci de) (?:me )?(?:indiquer|donner|préciser|fournir|communiquer|"
    r"confirmer)\b|\b(?:pourriez|pouvez)-vous (?:me )?(?:indiquer|donner|préciser|fournir|"
    r"communiquer|confirmer)\b|\bindiquez-moi\b|\bdites-moi\b",
    r"\b(?:bitte )?(?:nennen|geben|teilen|sagen) Sie (?:mir )?\b|\bbitte (?:angeben|mitteilen)\b",
    r"\bpor favor,? (?:informe|forneça|diga)\b|\bper favore,? (?:indicami|dimmi|fornisci)\b",
    # Portuguese and Spanish "can you tell me": "Pode me informar ...?", "¿Me puedes decir ...?"
    r"\b(?:pode|poderia|podes|consegue)(?: me)? (?:informar|dizer|passar|enviar|fornecer|"
    r"confirmar|indicar|falar)\b|\bme (?:puedes|podrías|puede|podría) (?:decir|indicar|dar|"
    r"confirmar|proporcionar|enviar)\b",
    r"\b(?:puoi|potresti|può|potrebbe)(?: \w+)? (?:dirmi|indicarmi|darmi|fornirmi|confermare|"
    r"specificare)\b|\b(?:indicami|dimmi|fammi sapere|specificami)\b",
    r"\b(?:kannst du|könntest du|können Sie|könnten Sie)(?: \w+){0,4} (?:sagen|nennen|geben|"
    r"mitteilen|angeben)\b|\b(?:nenn|sag|gib) mir\b",
    # Russian polite imperatives, in any order with "пожалуйста".
    r"(?<![а-яё])(?:уточните|укажите|сообщите|назовите|напишите|подскажите|пришлите|"
    r"предоставьте|скажите|дайте знать)(?![а-яё])",
    r"请(?:您)?(?:提供|告诉|说明|确认|输入|给出|指定|补充)|能否(?:提供|告诉)|需要您(?:提供|告诉)",
    r"(?:教えて|お知らせ|ご提供|ご入力|入力して|お聞かせ|ご指定|指定して)(?:ください|下さい|"
    r"いただけますか)",
    r"(?:알려|말씀해|입력해|제공해) ?주(?:세요|시겠어요|십시오)",
    r"请问",
    # Thai: "ขอทราบ" (may I know), "กรุณาแจ้ง/ระบุ" (please tell/specify).
    r"ขอทราบ|กรุณา(?:แจ้ง|ระบุ|บอก|ให้ข้อมูล|ยืนยัน|ส่ง)|(?:ช่วย)?(?:แจ้ง|บอก|ระบุ)[^\n]{0,40}?"
    r"(?:ด้วย|หน่อย)(?:ครับ|คะ|ค่ะ)",
    # Hindi "please tell", Arabic "please / can you", Vietnamese "please let me know".
    r"कृपया|बताइए|बताइये|बताएं|बताएँ",
    r"يرجى|الرجاء|من فضلك|رجاءً|هل يمكنك|هل يمكنكم|أرجو",
    r"\bvui lòng\b|\b(?:bạn|anh|chị|quý khách) (?:có thể |hãy )?cho (?:tôi|mình|em) biết\b",
    r"\b(?:mohon|tolong|silakan) (?:berikan|beri tahu|sebutkan|kirim|konfirmasi|informasikan)\b",
    r"\b(?:belirtir|söyler|paylaşır|verir) m[ıi]s[ıi]n[ıi]z\b|\blütfen\b",
    r"\bproszę (?:podać|podaj|wskazać|o podanie)\b|\b(?:kun|kunt) (?:je|u) (?:me )?(?:vertellen|"
    r"laten weten|geven|doorgeven)\b",
)
ASKS = _any(*_ENGLISH_ASKS, *_OTHER_ASKS)

# "I'd need the weather tool" is a refusal, not a request for a value.
NEEDS_CAPABILITY = re.compile(
    r"\bneed (?:to (?:have|use) )?(?:access to )?(?:a |an |the |some |internet |real-time |live )?"
    r"(?:[\w-]+ ){0,2}(?:tools?|access|apis?|functions?|capabilit\w*|internet|endpoint)\b",
    _I,
)

# -- questions that ask for nothing missing ------------------------------------------

# Questions that close a reply politely or offer a next step, in any language.
PLEASANTRY = _any(
    r"\b(?:anything|something) else\b|\bhow (?:else )?(?:can|may) I (?:help|assist)\b",
    r"\b(?:does|did) (?:that|this) help\b|\bhelpful\b|\bhope (?:that|this) helps\b",
    r"\bdid you know\b|\bever wonder(?:ed)?\b|\bhave you (?:ever )?heard\b",
    r"\b(?:know|learn|hear) more\b|\b(?:other|more|further|any) questions\b",
    r"\bif (?:you need anything|there'?s anything)\b|\bfeel free\b|\bjust ask\b",
    r"\blet me know how (?:it|that|this|things|everything|they) (?:goes|go|went|turns? out|"
    r"turned out|works?|worked)\b",
    r"\blet me know if you (?:need|want|'d like|would like) (?:any |some )?(?:help|anything|"
    r"more|further|assistance|other)\b",
    # A check that the reply landed: "Sound good?", "Make sense?".
    r"^(?:does (?:that|this) )?(?:sounds?|look|looks) (?:good|ok|okay|right|fine)\b|"
    r"^(?:does (?:that|this) )?makes? sense\b",
    r"\balgo más\b|\bautre chose\b|\bsonst noch\b|\bqualcos'altro\b|\bmais alguma coisa\b|"
    r"\bещё что-нибудь\b|还有(?:什么|其他)|其他问题|他に(?:何か|ご質問)|ほかに何か|다른 질문",
    r"\bnoch (?:etwas|was|Fragen)\b|\bweitere Fragen\b|\balgo mais\b|\bin altro\b|"
    r"\bd'autres questions\b|что-(?:нибудь|то) (?:ещё|еще)|(?:другие|ещё|еще) вопросы|"
    r"还需要|其他需要|더 궁금|다른 도움|कुछ और|और कुछ|अन्य कोई|شيء آخر|أسئلة أخرى|อะไรอีก|อีกไหม|"
    r"อีกมั้ย|\bgì (?:khác|thêm)\b|\bthêm gì\b|\bbaşka bir\b|\bada lagi\b|\bhal lain\b|"
    r"\bcoś jeszcze\b|\bw czymś jeszcze\b|\bnog iets\b|\bverder nog\b",
)
# A question that suggests what the user could do: "Why not check the site?".
SUGGESTION = re.compile(
    r"^(?:\w+[,!]\s*)?(?:why not|why don't you|have you (?:tried|considered|checked)|"
    r"how about (?:trying|checking|using|visiting)|what about (?:trying|checking|using))\b",
    _I,
)
WHICH = re.compile(r"(?:\w+[,!]\s*)?which\b", _I)
SECOND_PERSON = re.compile(
    r"\b(?:you|your|yours|you'd|you're|you've|you'll|usted|ustedes|vous|votre|vos|Sie|Ihnen|"
    r"Ihre?[mnrs]?|dich|dir|dein\w*|você|voi|lei|tu|ti|tuo|tua|вы|вас|вам|ваш\w*|ты|тебя|"
    r"тебе|твой|anda|kamu|bạn|siz|jij|uw|jouw)\b|您|你|あなた|당신|आप|तुम|คุณ|أنت|لديك",
    _I,
)
# An offer to act is no request for information; a yes/no offer that names
# alternatives ("Would you like a window or an aisle seat?") asks for a choice.
OFFER_TO_ACT = re.compile(
    r"^(?:\w+[,!]\s*)?(?:(?:would you like|do you want|do you need) me to|want me to)\b|"
    # The same offers in other languages, at the start: "¿Quieres que te lo busque?"
    r"^[¿\s]*(?:\w+[,!]\s*)?(?:(?:quieres|quiere|desea) que (?:te |le )?\w+|quer(?:es)? que eu|"
    r"vuoi che|(?:voulez-vous|veux-tu) que je|soll ich|möchtest du, dass ich|"
    r"möchten Sie, dass ich|хотите,? чтобы я|要我|需要我帮)\b",
    _I,
)
YES_NO_OFFER = re.compile(
    r"^(?:\w+[,!]\s*)?(?:would you like|do you want|do you need|shall I|should I|can I|may I)\b"
    # "Can I get your order number?" and "May I know your budget?" ask for a value.
    r"(?! (?:get|have|know|ask|see|take) (?:your|the|a|an|which|what)\b)",
    _I,
)
CHOICE = re.compile(r"\bor\b", _I)

# -- what follows a question ----------------------------------------------------------

# A statement after a question that says why the reply asks ("What year was
# the car made? The valuation tool needs the year"): the question asks the
# user for a value, it is not answered rhetorically.
NEED_REASON = _any(
    r"\bI(?:'d| would|'ll| will)?(?: still| also| first| just)? (?:need|require)\b|"
    r"\bI (?:only|just) have\b|\bso (?:that )?I can\b|\bto (?:proceed|continue)\b",
    rf"\b(?:{_TOOLS}|form|system|search|lookup|booking|service|it|this|that)\b "
    r"(?:needs|requires)\b|"
    r"\b(?:is|are) (?:needed|required|missing)\b",
    r"\bpreciso\b|\bprecisamos\b|\bnecesito\b|\bnecesitamos\b|\bnecessito\b|\bich brauche\b|"
    r"\bbrauche ich\b|\bbenötige\b|\bj'ai besoin\b|\bil me faut\b|\bho bisogno\b|\bmi serve\b|"
    r"мне нужн|без (?:него|неё|нее|этого|них)|我需要|が必要|필요합니다|ज़रूरत|जरूरत|चाहिए|ต้องใช้|"
    r"ต้องการ|\btôi cần\b|\bsaya perlu\b|أحتاج|\bpotrzebuję\b|\bik heb\b.{0,30}\bnodig\b",
)
# A limit the reply says does not matter, then answers: "I can't access live
# data, but that doesn't matter here: ...", "No tool needed for that!".
DISMISSED_LIMIT = _any(
    r"\b(?:that|this|it) (?:doesn't|does not|won't|will not) matter\b",
    r"\b(?:no|not) (?:\w+ )?(?:tool|function|lookup|search|api|web search|internet|live data|"
    r"calculator)s? (?:is |are )?(?:needed|necessary|required)\b",
    r"\bno need (?:for (?:a |any )?(?:\w+ )?(?:tool|lookup|search)|to (?:look|search|check|use|"
    r"call|browse))\b",
    r"\b(?:here(?:'s| is) the answer|I (?:can|could) (?:still )?answer (?:this|that|it) "
    r"(?:directly|anyway|from)|I don't need (?:one|it|a tool|any tools?|to look))\b",
)
