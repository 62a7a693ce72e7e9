"""Builds python/routecore/data/background.jsonl: the generic out-of-scope queries that
zero-label calibration scores against (README "Calibration" says how it is used).

Also writes ``parallel.jsonl``: everyday requests written for this project with their
translations (routecore.calibrate.languages), under the same overlap check.

Three sources, each background row tagged with it:
- ``routecore``: queries written for this project in nine languages (Apache-2.0, as the project);
- ``clinc150-oos-train``: the 100 out-of-scope queries of CLINC150's *train* split (CC BY 3.0,
  Larson et al., EMNLP 2019), unchanged;
- ``clinc150-oos-train-translated``: our translations of 40 of them into fr/zh/es (CC BY 3.0, derived).

No row may equal (case-insensitively) any row of a test, dev or val split under ../shared/datasets,
nor any MetaTool query; the script fails if one does. Run: ``python scripts/make_background.py``.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "datasets"
OUT = ROOT / "python" / "routecore" / "data" / "background.jsonl"
PARALLEL_OUT = OUT.with_name("parallel.jsonl")

OWN = {
    "en": [
        "who painted the ceiling of the sistine chapel",
        "write me a short poem about the sea",
        "what is the meaning of life",
        "how many bones are in the human body",
        "tell me something interesting about octopuses",
        "what's your favourite colour",
        "do you think aliens exist",
        "how do i make sourdough starter",
        "recommend a good fantasy novel",
        "why do onions make people cry",
        "what's the difference between a crocodile and an alligator",
        "can you help me name my new puppy",
        "how deep is the mariana trench",
        "who won the world cup in 1998",
        "what rhymes with orange",
        "explain the rules of chess to me",
        "i'm bored, say something funny",
        "how do i get red wine out of a carpet",
        "what should i cook for dinner tonight",
        "is a tomato a fruit or a vegetable",
        "what language do they speak in brazil",
        "how long do cats usually live",
        "give me a fun fact about space",
        "what year did the berlin wall fall",
        "how do you pronounce quinoa",
        "can penguins fly",
        "what's the best way to learn guitar",
        "who wrote pride and prejudice",
        "how do i fold a paper crane",
        "what's the capital of australia",
        "do you dream",
        "translate good morning into japanese",
        "how many hours of sleep does a teenager need",
        "what is photosynthesis",
        "suggest a name for a fantasy tavern",
        "how do i keep my basil plant alive",
        "what's a good stretch for lower back pain",
        "describe the taste of a mango",
        "how do bees make honey",
        "what did you have for breakfast",
    ],
    "fr": [
        "qui a écrit les misérables",
        "raconte-moi une blague",
        "quelle est la hauteur de la tour eiffel",
        "comment faire une pâte à crêpes",
        "pourquoi les chats ronronnent-ils",
        "quel temps fera-t-il à nice le week-end prochain",
        "conseille-moi un bon film de science-fiction",
        "combien de pattes a une araignée",
        "qui a gagné le tour de france en 2019",
        "comment apprendre à jouer du piano rapidement",
        "quelle est la capitale du canada",
        "écris un poème sur l'automne",
        "est-ce que tu as des sentiments",
        "comment enlever une tache de café",
        "quel âge a la terre",
        "pourquoi la mer est-elle salée",
        "donne-moi une idée de cadeau pour ma grand-mère",
        "combien de temps faut-il pour cuire un œuf dur",
        "que signifie le mot procrastination",
        "quel est le plus grand océan du monde",
        "comment s'appelle le chien de tintin",
        "je m'ennuie, parle-moi de quelque chose",
        "quelle est la recette du bœuf bourguignon",
        "comment dit-on merci en allemand",
        "qui a peint la joconde",
    ],
    "zh": [
        "长城有多长",
        "给我讲个笑话",
        "地球上有多少个国家",
        "怎么做红烧肉",
        "熊猫一天吃多少竹子",
        "推荐一本好看的小说",
        "为什么海水是咸的",
        "李白是哪个朝代的诗人",
        "明天北京会下雨吗",
        "如何学好英语口语",
        "世界上最高的山是哪座",
        "你喜欢什么音乐",
        "帮我写一首关于春天的诗",
        "月亮离地球有多远",
        "猫为什么怕水",
        "怎么养多肉植物",
        "谁发明了电话",
        "你是人吗",
        "今年的春节是哪一天",
        "咖啡喝多了有什么坏处",
    ],
    "de": [
        "wer hat die relativitätstheorie entwickelt",
        "erzähl mir einen witz",
        "wie backe ich einen apfelstrudel",
        "wie viele einwohner hat berlin",
        "warum ist die banane krumm",
        "was ist die hauptstadt von spanien",
        "kannst du mir ein gedicht schreiben",
        "wie lange lebt ein elefant",
        "welches buch soll ich als nächstes lesen",
        "was bedeutet das wort gemütlichkeit",
    ],
    "es": [
        "quién escribió don quijote",
        "cuéntame un chiste",
        "cómo se hace una paella",
        "cuántos planetas hay en el sistema solar",
        "por qué los gatos duermen tanto",
        "recomiéndame una película de terror",
        "cuál es el río más largo del mundo",
        "cómo puedo aprender a bailar salsa",
        "qué significa la palabra saudade",
        "quién ganó el mundial de 2010",
    ],
    "vi": [
        "ai là tác giả của truyện kiều",
        "kể cho tôi một câu chuyện cười",
        "cách nấu phở bò ngon",
        "sông nào dài nhất việt nam",
        "tại sao lá cây có màu xanh",
        "gợi ý cho tôi một bộ phim hay",
        "hà nội có bao nhiêu quận",
        "làm sao để ngủ ngon hơn",
    ],
    "pt": [
        "quem descobriu o brasil",
        "me conta uma piada",
        "como fazer pão de queijo",
        "qual é o maior animal do mundo",
        "recomenda um livro de aventura",
    ],
    "it": [
        "chi ha dipinto la nascita di venere",
        "raccontami una barzelletta",
        "come si prepara il tiramisù",
        "quanto è alto il monte bianco",
        "consigliami una canzone allegra",
    ],
    "ja": [
        "富士山の高さはどれくらいですか",
        "面白い話をして",
        "カレーの作り方を教えて",
        "猫はなぜ高いところが好きなの",
        "おすすめの映画はありますか",
    ],
}
# Our translations of CLINC150 oos_train sentences (derived: CC BY 3.0).
CLINC_TRANSLATED = {
    "fr": [
        "comment fabrique-t-on la colle",
        "quel est le plus grand état des états-unis",
        "combien de planètes avons-nous découvertes",
        "combien de côtés a un hexagone",
        "à quelle vitesse vole un avion",
        "quels arbres changent de couleur en automne",
        "où est né john denver",
        "qui a formulé la théorie de la relativité",
        "quel piano est le meilleur pour la musique classique",
        "quelles sont les œuvres les plus célèbres de picasso",
        "combien de personnes vivent à taïwan",
        "quand camus est-il mort",
        "combien de joueurs y a-t-il dans l'équipe des chicago bulls",
        "quand la mls a-t-elle commencé",
        "comment devenir ingénieur aérospatial",
    ],
    "zh": [
        "胶水是怎么做的",
        "美国最大的州是哪个",
        "我们发现了多少颗行星",
        "六边形有几条边",
        "飞机飞得有多快",
        "秋天哪些树会变色",
        "谁提出了相对论",
        "毕加索最著名的作品有哪些",
        "台湾有多少人口",
        "加缪是什么时候去世的",
        "芝加哥公牛队的教练是谁",
        "任天堂是什么时候创立的",
        "怎样才能成为航空航天工程师",
        "星际迷航是哪一年上映的",
        "安卓手机的电池平均能用多久",
    ],
    "es": [
        "cómo se fabrica el pegamento",
        "cuántos lados tiene un hexágono",
        "quién formuló la teoría de la relatividad",
        "cuáles son las obras más famosas de picasso",
        "cuándo murió camus",
        "cuántos estudiantes asisten a ucsb",
        "qué árboles cambian de color en otoño",
        "cuándo se creó nintendo",
        "dónde puedo ver arte",
        "cuánto gana radiohead al año",
    ],
}


# Everyday requests written for this project in six languages, each row one sentence and its
# translations (Apache-2.0). Not background rows: routecore.calibrate.languages reads how far a translation
# scores from its original against a router's routes.
PARALLEL_LANGS = ("en", "fr", "zh", "es", "de", "vi")
PARALLEL = [
    (
        "can you remind me to call my sister tonight",
        "peux-tu me rappeler d'appeler ma sœur ce soir",
        "你能提醒我今晚给我姐姐打电话吗",
        "puedes recordarme llamar a mi hermana esta noche",
        "kannst du mich daran erinnern, heute Abend meine Schwester anzurufen",
        "bạn có thể nhắc tôi gọi cho chị gái tối nay không",
    ),
    (
        "how long should pasta cook in boiling water",
        "combien de temps faut-il cuire les pâtes dans l'eau bouillante",
        "意大利面在沸水里要煮多久",
        "cuánto tiempo hay que cocer la pasta en agua hirviendo",
        "wie lange muss Pasta in kochendem Wasser garen",
        "mì ống cần nấu trong nước sôi bao lâu",
    ),
    (
        "my laptop screen keeps flickering",
        "l'écran de mon ordinateur portable n'arrête pas de clignoter",
        "我的笔记本电脑屏幕一直在闪烁",
        "la pantalla de mi portátil no deja de parpadear",
        "der Bildschirm meines Laptops flackert ständig",
        "màn hình máy tính xách tay của tôi cứ nhấp nháy",
    ),
    (
        "book a table for four at an italian restaurant",
        "réserve une table pour quatre dans un restaurant italien",
        "在一家意大利餐厅订一张四人桌",
        "reserva una mesa para cuatro en un restaurante italiano",
        "reserviere einen Tisch für vier in einem italienischen Restaurant",
        "đặt một bàn cho bốn người ở nhà hàng Ý",
    ),
    (
        "what time does the next train to the airport leave",
        "à quelle heure part le prochain train pour l'aéroport",
        "下一班去机场的火车几点出发",
        "a qué hora sale el próximo tren al aeropuerto",
        "wann fährt der nächste Zug zum Flughafen",
        "chuyến tàu tiếp theo đến sân bay khởi hành lúc mấy giờ",
    ),
    (
        "i need to change the password of my account",
        "je dois changer le mot de passe de mon compte",
        "我需要修改我账户的密码",
        "necesito cambiar la contraseña de mi cuenta",
        "ich muss das Passwort meines Kontos ändern",
        "tôi cần đổi mật khẩu tài khoản của mình",
    ),
    (
        "how much money is left in my savings account",
        "combien d'argent reste-t-il sur mon compte épargne",
        "我的储蓄账户里还剩多少钱",
        "cuánto dinero queda en mi cuenta de ahorros",
        "wie viel Geld ist noch auf meinem Sparkonto",
        "tài khoản tiết kiệm của tôi còn bao nhiêu tiền",
    ),
    (
        "turn down the heating in the bedroom",
        "baisse le chauffage dans la chambre",
        "把卧室的暖气调低",
        "baja la calefacción del dormitorio",
        "dreh die Heizung im Schlafzimmer herunter",
        "giảm nhiệt độ máy sưởi trong phòng ngủ",
    ),
    (
        "what is the weather going to be like on saturday",
        "quel temps fera-t-il samedi",
        "星期六天气会怎么样",
        "qué tiempo hará el sábado",
        "wie wird das Wetter am Samstag",
        "thời tiết thứ bảy sẽ thế nào",
    ),
    (
        "send a message to the team that i will be late",
        "envoie un message à l'équipe pour dire que je serai en retard",
        "给团队发消息说我会迟到",
        "envía un mensaje al equipo diciendo que llegaré tarde",
        "schick dem Team eine Nachricht, dass ich mich verspäte",
        "gửi tin nhắn cho nhóm rằng tôi sẽ đến muộn",
    ),
    (
        "the printer on the second floor is out of paper",
        "l'imprimante du deuxième étage n'a plus de papier",
        "二楼的打印机没纸了",
        "la impresora del segundo piso se ha quedado sin papel",
        "der Drucker im zweiten Stock hat kein Papier mehr",
        "máy in ở tầng hai hết giấy rồi",
    ),
    (
        "play some relaxing music while i cook",
        "mets de la musique relaxante pendant que je cuisine",
        "我做饭的时候放点轻松的音乐",
        "pon música relajante mientras cocino",
        "spiel entspannende Musik, während ich koche",
        "bật nhạc thư giãn trong lúc tôi nấu ăn",
    ),
    (
        "how do i cancel my gym membership",
        "comment résilier mon abonnement à la salle de sport",
        "我怎么取消健身房会员",
        "cómo cancelo mi suscripción al gimnasio",
        "wie kündige ich meine Mitgliedschaft im Fitnessstudio",
        "làm thế nào để hủy thẻ thành viên phòng gym",
    ),
    (
        "find a pharmacy that is open now",
        "trouve une pharmacie ouverte maintenant",
        "找一家现在营业的药店",
        "busca una farmacia que esté abierta ahora",
        "finde eine Apotheke, die jetzt geöffnet hat",
        "tìm một hiệu thuốc đang mở cửa",
    ),
    (
        "add milk and bread to my shopping list",
        "ajoute du lait et du pain à ma liste de courses",
        "把牛奶和面包加到我的购物清单里",
        "añade leche y pan a mi lista de la compra",
        "füge Milch und Brot zu meiner Einkaufsliste hinzu",
        "thêm sữa và bánh mì vào danh sách mua sắm của tôi",
    ),
    (
        "why was my card declined at the store",
        "pourquoi ma carte a-t-elle été refusée au magasin",
        "为什么我的卡在商店被拒了",
        "por qué rechazaron mi tarjeta en la tienda",
        "warum wurde meine Karte im Geschäft abgelehnt",
        "tại sao thẻ của tôi bị từ chối ở cửa hàng",
    ),
    (
        "set a timer for twenty minutes",
        "mets un minuteur de vingt minutes",
        "设置一个二十分钟的计时器",
        "pon un temporizador de veinte minutos",
        "stell einen Timer auf zwanzig Minuten",
        "đặt hẹn giờ hai mươi phút",
    ),
    (
        "who is playing in the football match tonight",
        "qui joue au match de football ce soir",
        "今晚的足球比赛谁和谁踢",
        "quién juega en el partido de fútbol esta noche",
        "wer spielt heute Abend im Fußballspiel",
        "ai thi đấu trong trận bóng đá tối nay",
    ),
    (
        "the database server is not responding",
        "le serveur de base de données ne répond pas",
        "数据库服务器没有响应",
        "el servidor de la base de datos no responde",
        "der Datenbankserver antwortet nicht",
        "máy chủ cơ sở dữ liệu không phản hồi",
    ),
    (
        "translate this sentence into english",
        "traduis cette phrase en anglais",
        "把这句话翻译成英语",
        "traduce esta frase al inglés",
        "übersetze diesen Satz ins Englische",
        "dịch câu này sang tiếng Anh",
    ),
    (
        "how many calories are in a banana",
        "combien de calories y a-t-il dans une banane",
        "一根香蕉有多少卡路里",
        "cuántas calorías tiene un plátano",
        "wie viele Kalorien hat eine Banane",
        "một quả chuối có bao nhiêu calo",
    ),
    (
        "schedule a meeting with john next tuesday",
        "planifie une réunion avec john mardi prochain",
        "下周二和约翰安排一次会议",
        "programa una reunión con john el próximo martes",
        "plane ein Meeting mit John am nächsten Dienstag",
        "lên lịch họp với John vào thứ ba tới",
    ),
    (
        "is there a lot of traffic on the way to work",
        "y a-t-il beaucoup de circulation sur le chemin du travail",
        "去上班的路上堵车严重吗",
        "hay mucho tráfico de camino al trabajo",
        "ist viel Verkehr auf dem Weg zur Arbeit",
        "đường đi làm có bị kẹt xe nhiều không",
    ),
    (
        "tell me a short story about a brave dog",
        "raconte-moi une courte histoire sur un chien courageux",
        "给我讲一个关于一只勇敢的狗的小故事",
        "cuéntame una historia corta sobre un perro valiente",
        "erzähl mir eine kurze Geschichte über einen mutigen Hund",
        "kể cho tôi một câu chuyện ngắn về một chú chó dũng cảm",
    ),
]


def held_out_texts(train: bool = False) -> set[str]:
    """Every query of a test, dev or val split (with ``train``: of every split), and every
    MetaTool query, lower-cased."""
    out: set[str] = set()
    for f in glob.glob(str(SHARED / "**" / "*.jsonl"), recursive=True):
        if not train and not any(s in Path(f).name for s in ("test", "dev", "val")) and "metatool" not in f:
            continue
        for line in open(f, encoding="utf-8"):
            o = json.loads(line)
            out.update(o[k].strip().lower() for k in ("text", "query") if isinstance(o.get(k), str))
    return out


def main() -> int:
    rows = [{"text": t, "lang": lang, "source": "routecore"} for lang, xs in OWN.items() for t in xs]
    rows += [
        {"text": t, "lang": lang, "source": "clinc150-oos-train-translated"}
        for lang, xs in CLINC_TRANSLATED.items()
        for t in xs
    ]
    for line in open(SHARED / "clinc150" / "train.jsonl", encoding="utf-8"):
        o = json.loads(line)
        if o["label"] == "oos":
            rows.append({"text": o["text"], "lang": "en", "source": "clinc150-oos-train"})
    parallel = [
        {"id": i, "lang": lang, "text": t}
        for i, row in enumerate(PARALLEL)
        for lang, t in zip(PARALLEL_LANGS, row)
    ]
    # The parallel set must not hold any dataset's row, train splits included: an exemplar
    # would score its own copy 1.0 and skew the transfer measured against its routes.
    every = held_out_texts(train=True)
    overlap = [r["text"] for r in rows if r["text"].strip().lower() in held_out_texts()]
    overlap += [r["text"] for r in parallel if r["text"].strip().lower() in every]
    if overlap:
        print(f"rows found in held-out splits: {overlap}", file=sys.stderr)
        return 1
    seen: set[str] = set()
    with open(OUT, "w", encoding="utf-8") as f:
        for r in rows:
            if r["text"].lower() not in seen:
                seen.add(r["text"].lower())
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(seen)} rows -> {OUT}")
    with open(PARALLEL_OUT, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in parallel)
    print(f"{len(PARALLEL)} sentences x {len(PARALLEL_LANGS)} languages -> {PARALLEL_OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
