"""Builds python/routecore/data/background.jsonl: the generic out-of-scope queries that
zero-label calibration scores against (README "Calibration" says how it is used).

Three sources, each row tagged with it:
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

OWN = {
"en": [
"who painted the ceiling of the sistine chapel", "write me a short poem about the sea", "what is the meaning of life",
"how many bones are in the human body", "tell me something interesting about octopuses", "what's your favourite colour",
"do you think aliens exist", "how do i make sourdough starter", "recommend a good fantasy novel", "why do onions make people cry",
"what's the difference between a crocodile and an alligator", "can you help me name my new puppy", "how deep is the mariana trench",
"who won the world cup in 1998", "what rhymes with orange", "explain the rules of chess to me", "i'm bored, say something funny",
"how do i get red wine out of a carpet", "what should i cook for dinner tonight", "is a tomato a fruit or a vegetable",
"what language do they speak in brazil", "how long do cats usually live", "give me a fun fact about space",
"what year did the berlin wall fall", "how do you pronounce quinoa", "can penguins fly", "what's the best way to learn guitar",
"who wrote pride and prejudice", "how do i fold a paper crane", "what's the capital of australia", "do you dream",
"translate good morning into japanese", "how many hours of sleep does a teenager need", "what is photosynthesis",
"suggest a name for a fantasy tavern", "how do i keep my basil plant alive", "what's a good stretch for lower back pain",
"describe the taste of a mango", "how do bees make honey", "what did you have for breakfast",
],
"fr": [
"qui a écrit les misérables", "raconte-moi une blague", "quelle est la hauteur de la tour eiffel", "comment faire une pâte à crêpes",
"pourquoi les chats ronronnent-ils", "quel temps fera-t-il à nice le week-end prochain", "conseille-moi un bon film de science-fiction",
"combien de pattes a une araignée", "qui a gagné le tour de france en 2019", "comment apprendre à jouer du piano rapidement",
"quelle est la capitale du canada", "écris un poème sur l'automne", "est-ce que tu as des sentiments", "comment enlever une tache de café",
"quel âge a la terre", "pourquoi la mer est-elle salée", "donne-moi une idée de cadeau pour ma grand-mère",
"combien de temps faut-il pour cuire un œuf dur", "que signifie le mot procrastination", "quel est le plus grand océan du monde",
"comment s'appelle le chien de tintin", "je m'ennuie, parle-moi de quelque chose", "quelle est la recette du bœuf bourguignon",
"comment dit-on merci en allemand", "qui a peint la joconde",
],
"zh": [
"长城有多长", "给我讲个笑话", "地球上有多少个国家", "怎么做红烧肉", "熊猫一天吃多少竹子", "推荐一本好看的小说",
"为什么海水是咸的", "李白是哪个朝代的诗人", "明天北京会下雨吗", "如何学好英语口语", "世界上最高的山是哪座",
"你喜欢什么音乐", "帮我写一首关于春天的诗", "月亮离地球有多远", "猫为什么怕水", "怎么养多肉植物",
"谁发明了电话", "你是人吗", "今年的春节是哪一天", "咖啡喝多了有什么坏处",
],
"de": [
"wer hat die relativitätstheorie entwickelt", "erzähl mir einen witz", "wie backe ich einen apfelstrudel",
"wie viele einwohner hat berlin", "warum ist die banane krumm", "was ist die hauptstadt von spanien",
"kannst du mir ein gedicht schreiben", "wie lange lebt ein elefant", "welches buch soll ich als nächstes lesen",
"was bedeutet das wort gemütlichkeit",
],
"es": [
"quién escribió don quijote", "cuéntame un chiste", "cómo se hace una paella", "cuántos planetas hay en el sistema solar",
"por qué los gatos duermen tanto", "recomiéndame una película de terror", "cuál es el río más largo del mundo",
"cómo puedo aprender a bailar salsa", "qué significa la palabra saudade", "quién ganó el mundial de 2010",
],
"vi": [
"ai là tác giả của truyện kiều", "kể cho tôi một câu chuyện cười", "cách nấu phở bò ngon", "sông nào dài nhất việt nam",
"tại sao lá cây có màu xanh", "gợi ý cho tôi một bộ phim hay", "hà nội có bao nhiêu quận", "làm sao để ngủ ngon hơn",
],
"pt": [
"quem descobriu o brasil", "me conta uma piada", "como fazer pão de queijo", "qual é o maior animal do mundo",
"recomenda um livro de aventura",
],
"it": [
"chi ha dipinto la nascita di venere", "raccontami una barzelletta", "come si prepara il tiramisù",
"quanto è alto il monte bianco", "consigliami una canzone allegra",
],
"ja": [
"富士山の高さはどれくらいですか", "面白い話をして", "カレーの作り方を教えて", "猫はなぜ高いところが好きなの",
"おすすめの映画はありますか",
],
}
# Our translations of CLINC150 oos_train sentences (derived: CC BY 3.0).
CLINC_TRANSLATED = {
"fr": [
"comment fabrique-t-on la colle", "quel est le plus grand état des états-unis", "combien de planètes avons-nous découvertes",
"combien de côtés a un hexagone", "à quelle vitesse vole un avion", "quels arbres changent de couleur en automne",
"où est né john denver", "qui a formulé la théorie de la relativité", "quel piano est le meilleur pour la musique classique",
"quelles sont les œuvres les plus célèbres de picasso", "combien de personnes vivent à taïwan", "quand camus est-il mort",
"combien de joueurs y a-t-il dans l'équipe des chicago bulls", "quand la mls a-t-elle commencé", "comment devenir ingénieur aérospatial",
],
"zh": [
"胶水是怎么做的", "美国最大的州是哪个", "我们发现了多少颗行星", "六边形有几条边", "飞机飞得有多快", "秋天哪些树会变色",
"谁提出了相对论", "毕加索最著名的作品有哪些", "台湾有多少人口", "加缪是什么时候去世的", "芝加哥公牛队的教练是谁",
"任天堂是什么时候创立的", "怎样才能成为航空航天工程师", "星际迷航是哪一年上映的", "安卓手机的电池平均能用多久",
],
"es": [
"cómo se fabrica el pegamento", "cuántos lados tiene un hexágono", "quién formuló la teoría de la relatividad",
"cuáles son las obras más famosas de picasso", "cuándo murió camus", "cuántos estudiantes asisten a ucsb",
"qué árboles cambian de color en otoño", "cuándo se creó nintendo", "dónde puedo ver arte", "cuánto gana radiohead al año",
],
}


def held_out_texts() -> set[str]:
    """Every query of a test, dev or val split, and every MetaTool query, lower-cased."""
    out: set[str] = set()
    for f in glob.glob(str(SHARED / "**" / "*.jsonl"), recursive=True):
        if not any(s in Path(f).name for s in ("test", "dev", "val")) and "metatool" not in f:
            continue
        for line in open(f, encoding="utf-8"):
            o = json.loads(line)
            out.update(o[k].strip().lower() for k in ("text", "query") if isinstance(o.get(k), str))
    return out


def main() -> int:
    rows = [{"text": t, "lang": lang, "source": "routecore"} for lang, xs in OWN.items() for t in xs]
    rows += [{"text": t, "lang": lang, "source": "clinc150-oos-train-translated"} for lang, xs in CLINC_TRANSLATED.items() for t in xs]
    for line in open(SHARED / "clinc150" / "train.jsonl", encoding="utf-8"):
        o = json.loads(line)
        if o["label"] == "oos":
            rows.append({"text": o["text"], "lang": "en", "source": "clinc150-oos-train"})
    overlap = [r["text"] for r in rows if r["text"].strip().lower() in held_out_texts()]
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
