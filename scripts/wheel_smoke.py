"""Smoke test of an installed routecore wheel (issue 16 §1; run by .ci/run).

Checks, with the bundled multilingual-e5-small int8 model and nothing from the source tree:
- routecore is imported from site-packages, and its licences are in the wheel's metadata;
- route: the bundled IT-operations example routes French and English turns;
- tools: the bundled tool catalog flags the ha_get_logs / get_system_logs collision and says
  that no tool fits a weather question;
- encoder parity on three reference texts (English, French, Chinese) from
  ../shared/models/multilingual-e5-small/reference.jsonl: the token ids are equal, the cosine to
  the fp32 PyTorch embedding is >= 0.99 and equal, within 2e-3, to the cosine that onnxruntime-python
  + tokenizers-python got on the same int8 file (`cos_onnx_int8`).

    python scripts/wheel_smoke.py            # exit status 0 on success, prints one JSON line
    python scripts/wheel_smoke.py --emit-reference ../shared/models/multilingual-e5-small/reference.jsonl
                                             # prints the REFERENCE block below (float32, base64)
"""

from __future__ import annotations

import base64
import json
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

# Lines 6, 21 and 35 of reference.jsonl: input_ids, cos_onnx_int8 and the fp32 embedding
# (little-endian float32, base64). Regenerate with --emit-reference.
REFERENCE_LINES = (6, 21, 35)
REFERENCE = [
    {
        "text": "Why was my card declined at the store yesterday?",
        "input_ids": [0, 41, 1294, 12, 44084, 509, 759, 20596, 206398, 71, 99, 70, 4343, 131101, 32, 2],
        "cos_onnx_int8": 0.997234,
        "embedding": (
            "hiA3PTl+Hr1ayvu7rmInvXB3wzxLr0q92d7MvOe2TzyE+qw935tmPCoYlz0C3QI9jIKmPRZ0/btiME69eOYuPZvbTT1SKUS91qoh"
            "vVbRmr015ws9oOAHPKRFQb2sQpc9NaBNPROyrD0Kq6y6Ni4vPReA1zxzM7a92wWeve2uT72GkxQ9TwSaveDACj3h9fI8kN+Vvb6P"
            "ar3LQpk9uhTFvJZUlb2rocI84osTPYTHzj1elTs9dfEaPd7ysLxQ9Hs99X3WvNIi97x9ES+9UkA6PRPBbbyA3NQ9+VtaPae7Z70P"
            "vsK8Y9wpvfmpkL1kvkU9qawQPQrwQ70zHnA8winbPGQlwT1GtIs9i2XKPP7StD1Y6q69TOElvTPhtr3gniU975gbPaDqvrxlIcm8"
            "L67fPLsptjvwlBK95bP5OUDJybxqLI29KUkcveWHM72VRqM81rCXvXeAJj0uVkc936mBvadMXT2o5by8A7JCPcbzpj2tfqm8Amtn"
            "vWilWb1bGx+9Txd8vXZtazyvSzs93oCfvaFxtTxoOPm8m7ljPZq7IryKcui8UiyWPE8i1jyIFIa9lOqHPQ9vMb37bXi9u0bqPFni"
            "ZD2SSbQ8wea4vQaoPb1FLhy84F03vRzPBD0uYTG92W9CPc/GiryHpSq9/ZdMvJPErr32zCw8heM7PY6gOD3jnxQ9KB2MOuqJLT2V"
            "C1U82HEiPWxSrjzQc1k9MkqtPa/cc73ONnU70DYZvbkytrvoQBO9qyx8PXYf2Lx6hQE9Xb1pPZJZojxefZA9Pe/4vKZhxD3S/Gi9"
            "d0fZPNKrGb1saCU9PDIEPd6P9rpyD5a9/KoovR+QA73qoZE9dXAiPVpBd70+i6a9GKXHvaxTVbsBO2q9LQEsPXmkVD0o+kY9pQv3"
            "vMTfh7w39aG9mQk6O1wRgb37RfU854UTOlwGTT3nvkK9gDxYPagTnz3LXwg9zRHUvFLcZLzJ5VG9dnJ2vdtrDL0Xp7296MBoveX3"
            "LD0MumM9BENQvT1ou7xkO3E9OqQGvXIeK73yNg+9x9UAPYa9Yb04+IM8XFZ5PaSvsjztqbg8I1lfvAtUiTxT36A9U3Q9PeBAwjoP"
            "RTe9O2u6PQmQh73V3VY9l6R+PdxPW706tIu92aqMPbMmcL08mUW8TnKwPNnYKz0K8di8uc5zPT7jkD2u55I8W0F3PbQB3b3jsUa9"
            "SSN6PB/ABT0azbu9+gA0vbi3HD25Jcu9EZGAvdKihb3oypy90vKCvJ8XK71h4AG8v1puPexsOj0FoUW9/YaXvdNojrw8P2I8Yu12"
            "vUjoCz0/Lgy9w4qLvQGgIz039tS8Bxm+u8o6nD30GGK9Hz6ivFQzbL1yPCu9HEGfPRfXGzjF1Xw9pvEUvWXSTTyg/QO9p2sivMPq"
            "xj26+PE8UPxOPUae+DyAwXS9NFMKvdiseb0P8Bu9o/7WvQHRuj0rRzk91nInvfizEb3JPQ+9RdCaPLCroD3GiUu9zi6ivB3gqj2f"
            "paU8c8nwPL9soT2QWJI9JXQrvUBAFbylMqk9ghoCvR+efDySkEk6YfM2vWt6hT34PO+6bhNvPQcqJDw0xhO9NJB/PXaH+7xNG4o7"
            "6B1CvYq7XL0q/WO8CdRZPSZ1vb1QoZI82dvZO3b4vj0oen48bAmvPb21LD36a6s95Ao5vTpBwLx/YQ49xwSJPWwdnbtuv1Q8aFqp"
            "vLjNrb1NG4m9egAwvXBFMrwd9ye95vUkPeT9Gz3SJYy92qOPvckmHD3LLg+8GmNUvDdRH7wWkiq9OmsxPWfTob1qzEE60q0avOcF"
            "/Tw2zpG9SVwUvfZq7TxHwNo8OChSvQr3CD3hf3C64rpbvYuwxz03gqe85ERrvalivT1IMaM9HrbVvTrYEj2hylY9mEKfvKLCkT3R"
            "IzS8osU9vYJv8zy+P1E9855Yvb+x67xMMRI9wQOXPQgsarvvK8c9rVkavX8NAj37th49YmvCvS7liT0oC009G1AfvY8obryhCzm9"
            "SYbJvBd2kL1uTYU8uLIrvfMvGb11sJ49cXWrPb1iWr388HU9"
        ),
    },
    {
        "text": "Je voudrais réserver une chambre pour deux nuits.",
        "input_ids": [0, 41, 1294, 12, 845, 213578, 95326, 42, 773, 76636, 578, 7821, 56392, 7, 5, 2],
        "cos_onnx_int8": 0.998875,
        "embedding": (
            "cBWyO0CrX7y6yFS9QEFyvU6epT0e1BG9Nl+VPJqUZj1PJ4s9Hx5VPZTWaz0TQG08f8zwPbbW6DtAyVC9k96sPELegD3kEVO9sHLH"
            "vOJ8Hr1xDW+7B/VyPJyzHL38gTA99OGnPdMsGT3g4XY8f6EXPdv1NT1dJ9W9wjrqvEjAOr2RRdQ8QuWmvZ/9jD0ujIe7etXLvNk1"
            "pb2UhIQ9ZmGGvS3QP7w5MN48nNUtPQZtdz3q8EE9/bv2PFYYkL10nWk9XQA2vUY1z7zGqaq9+cIdPUDj/jtO+3E9fQnpOvunWr3Y"
            "pLK9oYavvXkPeb2SoVE9EqSWPddvQD3PYKu8xU1cPKqGqD2O+549aLymu+tLOD0XR0y9ohQRvIG67rxfIhA9e5AHu/qsGb1yMPS8"
            "r+fyO2lF3zx9Mli9LdpIPeeGI71eZSe9AELIvO0y6bxcrzo9E8eLvUTOsj2rLOw8M3CQvawo2zyAIIG801SzPavNYz0oY+y8fBn6"
            "vBuAf72cuiO9+H6dvTsSPD0rjWI9uG5FvTM/eT0zDOS7vcPOO02r2Lx92oW9uL5cPfwD6zzJASe9yjVQPSS2K72S5DG9avUHvIO9"
            "0zwd9Ig9WciGvV5uXrw+bv+8o4SOvUb4Xj1ph0a9mkCCPRVuqrwLIiW9mCYcvQhq8LwlOKC8czyRPVf5NzuLEYk8zRkoPO8FgDws"
            "kJo8hKGCPXSrAT0BGDA8sW27PaDRJr1YYwa6MBAdvH7RSLz4nmC8YbEVPZxkR73WJbe8EuqePQIeeD2A0ao9BmEPvcg9gj1sbA+8"
            "ggyEPH3njL3nxRo93gwiPZvKuzxw2yG9M5epvYwuUr1gTZU8UswHPa4Wh70pUdG9UFArvdKTm7xVB/e8FbqJvBfE2Dy+Z6U9qFhW"
            "vRcsFr3YrC29PzuMPZX+Cb3DWSE99H07vSOKsT3YpZO9ljJvPZIscj3iHMs9ND/vvNTVK7zeS627THMzvUv4C72QVgy9m46OvVC4"
            "Uz1zX/O7iSWSOlFPo7xdh0s98R04vTUkyLySWNi8jQB7PCoVe7x/UEU95TpoPYE0UT2OVzu8CrP0vHSr8jyP6I49XFRHPVxUX7xU"
            "qZ+9Ogg/PVSjj71N5ws9UXQkPcH9Lb1T4SO9QIyVPao76ryU+1M9uX4+PBSpkz3kQGO9fTBDPSSGjD3hsTK91rBYPan69734ZTC9"
            "kqQ0PZeyBz3/CLO9FskpvfeetTzSFQm9p2R6u48pDbz7re69fHZHvQBBGb14bWi7aXlDPRB+cj2itoC9q+8cvIQM77zqLSQ9jqjf"
            "vaEnpT2jyGI7epcFvWHIFD0djBK9380VvJZ4cT2pEk+9aX2XvV75R73gJ5m9/91mPA8JwT10DBQ9QslWvd2Yr7pNYnc9mfE4vdRa"
            "Bj7LnHU95NY6PTN/jD0gHJG9muKUPOtSlL3mUyu9LEmQvXIO6LsDlYo9llWMvZmIpb1uYwm9R65GPSnYhz0/cAy9/tS1vEANQT2j"
            "RT093tUtPao71j2iWPI8LTmVvckgTr2I1kg9oGfwvOxkvjsEYti7KjkAvUwLuT0UDmS9V7qPPcXURjx/NQc8n9kbPRdrg73k1LU9"
            "90xHvZg5Rr3v6w49JYmBPHS94L0JpFQ9btuHPBzlHzzujQA82ghpPVGveT1NtlE9G5JMvR0Uur1vPe88EKJIPRqmcj2XAGS8eKmO"
            "vXLYgbxCunG9dFB4vfJ9Rr206Ju9FtI0PbxFozyw+UO9Dkh1vY5jJT0/tRI9j3jsPGYDMbwUX4S9FzQjPen6Gb07yLw7G/Jovd5y"
            "nDwCmqq8TMJivc+LST1Ri209pMz/ur9G0DzHYEO9CrhhvSCdNz2L+ce7fo4qvLCtgT3oKf88hhPRvYzi+DyDVDI94L1kvV77fzyl"
            "U+G87LdvvWHbojyUNA89rdbKvY+j+DuxKOE8MtkrPfOv1z1HTyc9AgzVuSkVqbwOr0s9em8AvatafD2LIWA9ZifDvXIAcbwLFAa9"
            "xYRMvYqooL0GrMM8Y7qUvZGjb72EpwI9DgK/PcLIAz1CnVI9"
        ),
    },
    {
        "text": "今天天气很好，我们去公园散步吧。",
        "input_ids": [0, 41, 1294, 12, 61168, 70871, 29787, 4, 1535, 1677, 77493, 188955, 4502, 30, 2],
        "cos_onnx_int8": 0.998413,
        "embedding": (
            "JeBePcn2xDpkW/67o0W2vE80vT0Cr0i9b8+AvKFYHDu7ipg92zlMOjt01jwz4do8yNBQPXEIz7wsdp29Z5ZXPbV5Nj3ziVa9B3oi"
            "PD5Rfb2I8A+83EV+PM5EY70DUww9e/KaPaue/Tx2YSe9dMd2Pe58gT2ztJS9HE39vKpuNL1N28Y9SaJ1vOhHlz0S1UE9IYJ2vB8R"
            "b72n5mc9WFyuvWJ2HL0SCQC8oEcZPdmJoz1LBAk9xXStPZ33rL3kQ1o9+InavddCF73Eb3m9K2YuPSZJTz24mIw92QapOXhBl71I"
            "PL68HuqpvXqFu72H67Q9jKngPVUzbTt//Qc9LcHPPPIIvj0phGk9O8EKPXCrKD3f9Fq9jQalvKr8x7zZ1SQ9eMo4PKAELL3xtE88"
            "QLyxvGtYrjwVg+27skA6PRIGab0TYZu9oBIyvV2dW70HjQ88gkacvKupUT3jEjw9aLNxvX+/bz1axri7U8qaPM8VND0J1Sq9yz8m"
            "vTYkQb2gPDS9oMQrval4az2d7sY9c1wsvfaLzT1BiwG8usUqvAbRp711NFW9t0AbPXDFqT1UoI29Pir0PIQGSr39nzK9YJoUPa2m"
            "cbvyHmE91jQAvjjRObwbQg+9vKgdvSFj7zyPs0y9o5haPHrg6bw1qi29Wa6TPG66fb22GJ+9M0LAPCP5Kz0p25q839+kPOGFLT29"
            "nfI8DyYSPVZje7w+50c99hh5PTgBFb287M87t4jlO1wiybw2Vxa9DrVgPdKrJr3gqXE9tZmgPGYcDT2Rnh8970q4vJrNyT3NjGi7"
            "q9qjvARnf73GCwQ9Gwi5POrebz1ALXS9CisYvbGppL2wpqg9rLeWPStJk71E/ou95H58vYEp57zAzJS9ezyOvUVaYD1IbiQ9giDd"
            "vBgs6rygnEu9rin0PJQ7SL08u088mO+cunjC9Dww8Go8ThS5PCAPgD360k88+bW6PM9nVby5G369/QBQvSfDlb3NAzK9Dg6yu8dr"
            "zTzL/zY9o7QEvYEtjDwl3Jo9GexIvQUSYb1vYzW9tOU9Pcvour3DHD09NkTWPOTwWD2h2Ss7TS6zvZKFBz2M6cM8L3IEPaYpt7yV"
            "owO9plZYPCLLHr3nycI8AymhPe//fL0S5qC9LDlJPZzxSL0tqhY8M+KIPB4hMT2LG0i9HsV9PVEu+jza6qi8hinJPMNRc70WOF+8"
            "SMiDPU0FtzuCXs286WBIveUSwzzQkGW96D8PvVVep73Jgqy9N46BvQ/ym71MPqY8EglqPIAbXT3N76u9sWUFPeAtM71ShXu8CkOs"
            "vSQohj0kPzC9h7+2vO7lcj11AzS8sTixPKLNKD311yO98LkBvS+w7b2Axtq8RaIPvGJmaD0ubZ09iPrsvDQjFz3LOBo8YoG4vPW7"
            "4T0M95E9nLSOPeSxobyhe1S90yawvGqecr1ZtkW9G/KZvcYrJzzHpyw9PilRvZLtqL3udYm8XV2qPX/i2j1dJzy9mKynvD8ceD2V"
            "dYQ9/uh9PaQSgz0EwJI9YFd2vV8tgLvgPEI9l9mmva2IFrxkBTe7fuSuvLTvEj22a0K9OFbePJ1XCLwaQm+7ww+BPcELur0oCz89"
            "rGQYvc35Ib2z4Fy7PovJPGLGxL064M48F+gjPawOULxEr848nQi1PdVrtD0AbCo9xU6YvQbyhL0kQ4083MBVPMQVh7tQajS9UpBp"
            "vOkbZr0pWHC8elsWvfk+2TtwH2C9Se2gPSbucT1w1BS9d8EQvJ9FrT0RUIs8kfShO0ogf72PVkC9gddhPR/rYr0fLka9i0KEvQl6"
            "CT1TxSC9ymzjvLLxAz0Pn3c92P4QvVroXz0sRz29LtprvcfDWD1yMJS8bwEevSKCOD2+wjI9X6u8veG/zjxHprg9I22OvBEZLz1N"
            "8PK8ghhUvR5wuT0IaUg91kRavclQhLrUCII9bJoFPUXDmD0omy08u5asOymDeTuu3EE9gWepvYzdtT3aHFI9mi3jvOfauzxSsuK8"
            "/ZCDvYTcf72FcpM9Ds1IvfG7j72uVDA9QNGPPZk2Lj0N1Ts9"
        ),
    },
]


def emit_reference(path: str) -> None:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    print("REFERENCE = [")
    for i in REFERENCE_LINES:
        r = rows[i]
        emb = base64.b64encode(np.asarray(r["embedding"], dtype="<f4").tobytes()).decode()
        print(
            f'    {{"text": {json.dumps(r["text"], ensure_ascii=False)}, "input_ids": {r["input_ids"]}, '
            f'"cos_onnx_int8": {r["cos_onnx_int8"]},\n     "embedding": ({_wrap(emb)})}},'
        )
    print("]")


def _wrap(s: str, width: int = 100) -> str:
    return "\n                   ".join(json.dumps(s[i : i + width]) for i in range(0, len(s), width))


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"wheel smoke test FAILED: {what}")


def main() -> None:
    t0 = time.perf_counter()
    import routecore
    from routecore import Encoder, Router
    from routecore.core.runtime import onnxruntime_library

    import_s = time.perf_counter() - t0
    pkg = Path(routecore.__file__).resolve().parent
    check("site-packages" in pkg.parts, f"routecore imported from {pkg}, not from an installed wheel")

    dist = metadata.distribution("routecore")
    lic_files = sorted(str(f) for f in dist.files or () if "licenses" in str(f) or f.name == "LICENSE")
    check(
        any(f.endswith("licenses/LICENSE") for f in lic_files),
        f"no LICENSE in the wheel metadata: {lic_files}",
    )
    check(any("multilingual-e5-small/LICENSE" in f for f in lic_files), f"no model LICENSE: {lic_files}")
    model_license = (pkg / "models" / "multilingual-e5-small" / "LICENSE").read_text(encoding="utf-8")
    check("MIT License" in model_license, "the bundled model's LICENSE is not the MIT text")

    # Route: the bundled IT-operations example.
    examples = pkg / "examples"
    t = time.perf_counter()
    routes = Router.from_config(examples / "it_ops_routes.yaml")
    build_routes_s = time.perf_counter() - t
    expected = {
        "le serveur de production est en panne depuis ce matin": "INCIDENT",
        "the VPN is down for the whole office": "INCIDENT",
        "comment configurer le VPN sous Linux ?": "RAG",
        "bonjour, comment ça va": "GENERAL",
    }
    for query, route in expected.items():
        d = routes.route(query)
        check(
            d.action == "route" and d.route == route,
            f"route({query!r}) = {d.action} {d.route}, expected {route}",
        )

    # Tools: the bundled tool catalog.
    tools = Router.from_config(examples / "tools.yaml")
    belt = tools.tools("device logs")
    check({"ha_get_logs", "get_system_logs"} <= set(belt.names), f"tools('device logs') = {belt.names}")
    check(any(a.kind == "collision" for a in belt.alerts), f"no collision alert: {belt.alerts}")
    check(tools.tools("what's the weather in Paris").no_tool, "a tool was chosen for the weather")

    # Encoder parity on three reference texts.
    enc = Encoder.load(cache_size=0)
    parity = []
    for r in REFERENCE:
        ids = enc.tokenize(r["text"])[0]
        check(list(ids) == r["input_ids"], f"token ids of {r['text']!r}: {ids} != {r['input_ids']}")
        ref = np.frombuffer(base64.b64decode(r["embedding"]), dtype="<f4")
        got = enc.encode(r["text"])[0]
        cos = float(np.dot(got, ref) / (np.linalg.norm(got) * np.linalg.norm(ref)))
        check(cos >= 0.99, f"cosine to the fp32 reference of {r['text']!r} = {cos:.6f} < 0.99")
        check(
            abs(cos - r["cos_onnx_int8"]) <= 2e-3,
            f"{r['text']!r}: cosine {cos:.6f} vs onnxruntime-python {r['cos_onnx_int8']:.6f}",
        )
        parity.append(round(cos, 6))

    lib = onnxruntime_library()
    print(
        json.dumps(
            {
                "ok": True,
                "routecore": routecore.__version__,
                "onnxruntime": metadata.version("onnxruntime"),
                "onnxruntime_library": lib.name,
                "simd": routecore._native.simd_level(),
                "cos_fp32_reference": parity,
                "import_s": round(import_s, 3),
                "build_routes_s": round(build_routes_s, 2),
                "total_s": round(time.perf_counter() - t0, 2),
                "licenses": lic_files,
            }
        )
    )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--emit-reference":
        emit_reference(sys.argv[2])
    else:
        main()
