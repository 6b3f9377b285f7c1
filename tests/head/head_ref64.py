#!/usr/bin/env python3
"""Pure-Python float64 forward of the joint schema head, written from
tests/data/oracle/head/README.md ("The forward pass, precisely"); no torch, no numpy.

A development aid, not used by the C++ tests:
  head_ref64.py check DIR            compare with logits_f64 of every DIR/rec* (about 1e-15)
  head_ref64.py make-clamped SRC DST  copy config dir SRC to DST with prior/joint scales 5.25/4.875
                                      and gate -0.75 (both clamps bind, like the held-out
                                      tiny_clamped) and f64 reference logits in every record.json;
                                      then run the head tests with CLEF_EXTRA_HEAD_ORACLES=DST to
                                      see the engine's error against float64 with clamped scales.
For make-clamped, the lexical vectors are the f32 means (sequential f32 sum, then f32 division) that the engine is
given, so only the head's own rounding is measured.
"""
import json, math, struct, sys, os, shutil

def read_st(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    hdr = json.loads(b[8:8+n]); data = b[8+n:]
    out = {}
    for k, v in hdr.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; raw = data[s:e]
        if v['dtype'] == 'F32': vals = list(struct.unpack('<%df' % ((e-s)//4), raw))
        else: vals = [struct.unpack('<f', struct.pack('<I', x << 16))[0] for x in struct.unpack('<%dH' % ((e-s)//2), raw)]
        shp = v['shape']
        if len(shp) == 2: vals = [vals[i*shp[1]:(i+1)*shp[1]] for i in range(shp[0])]
        elif len(shp) == 0: vals = vals[0]
        out[k] = vals
    return out, hdr

def write_st(path, tensors):  # tensors: list of (name, shape, flat floats) F32
    hdr = {"__metadata__": {"format": "pt"}}; off = 0; data = b''
    for name, shape, flat in tensors:
        raw = struct.pack('<%df' % len(flat), *flat)
        hdr[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off+len(raw)]}
        off += len(raw); data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)

def ln(x, w, b):
    m = sum(x)/len(x); v = sum((a-m)**2 for a in x)/len(x); r = 1/math.sqrt(v+1e-5)
    return [(a-m)*r*wi+bi for a, wi, bi in zip(x, w, b)]
def lin(x, W, b=None):
    y = [sum(wi*xi for wi, xi in zip(row, x)) for row in W]
    return [a+c for a, c in zip(y, b)] if b is not None else y
def gelu(x): return [0.5*a*(1+math.erf(a/math.sqrt(2))) for a in x]
def add(a, b): return [x+y for x, y in zip(a, b)]
def mean(rows): n = len(rows); return [sum(c)/n for c in zip(*rows)]
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0]
def lexf32(rows):
    acc = [0.0]*len(rows[0])
    for r in rows: acc = [f32(a+b) for a, b in zip(acc, r)]
    return [f32(a/len(rows)) for a in acc]
def softmax(x): m = max(x); e = [math.exp(a-m) for a in x]; s = sum(e); return [a/s for a in e]
def normalize(v): n = max(math.sqrt(sum(a*a for a in v)), 1e-12); return [a/n for a in v]
def mha(X, Mk, p, pre, nh):
    W = p[pre+'.in_proj_weight']; B = p[pre+'.in_proj_bias']; E = len(W[0]); d = E//nh
    Q = [lin(x, W[:E], B[:E]) for x in X]; K = [lin(m, W[E:2*E], B[E:2*E]) for m in Mk]; V = [lin(m, W[2*E:], B[2*E:]) for m in Mk]
    out = []
    for q in Q:
        cat = []
        for h in range(nh):
            sl = slice(h*d, (h+1)*d); qh = [a/math.sqrt(d) for a in q[sl]]
            P = softmax([sum(a*b for a, b in zip(qh, k[sl])) for k in K])
            cat += [sum(P[s]*V[s][h*d+i] for s in range(len(V))) for i in range(d)]
        out.append(lin(cat, p[pre+'.out_proj.weight'], p[pre+'.out_proj.bias']))
    return out

def forward(p, cfg, hidden, ids, W, questions, lex_f32=True):
    nh = cfg['heads']; E = cfg['width']
    Xn = [ln(x, p['hidden_norm.weight'], p['hidden_norm.bias']) for x in hidden]
    M = [lin(x, p['memory_projection.weight']) for x in Xn]; g = Xn[-1]
    qv = [mean(Xn[q['question_span'][0]:q['question_span'][1]]) for q in questions]
    O = []; lex = []; owner = []
    for qi, q in enumerate(questions):
        oq = lin(qv[qi], p['option_question_projection.weight'])
        for s, e in q['option_spans']:
            c = mean(Xn[s:e]); l = (lexf32 if lex_f32 else mean)([W[i] for i in ids[s:e]]); lex.append(l); owner.append(qi)
            O.append(add(add(lin(c, p['option_context_projection.weight']), lin(l, p['option_lexical_projection.weight'])), oq))
    for i in range(cfg['routing_layers']):
        pre = 'evidence_layers.%d' % i
        Mn = [ln(m, p[pre+'.memory_norm.weight'], p[pre+'.memory_norm.bias']) for m in M]
        A = mha([ln(o, p[pre+'.query_norm.weight'], p[pre+'.query_norm.bias']) for o in O], Mn, p, pre+'.attention', nh)
        O = [add(o, a) for o, a in zip(O, A)]
        O = [add(o, lin(gelu(lin(ln(o, p[pre+'.feedforward_norm.weight'], p[pre+'.feedforward_norm.bias']), p[pre+'.feedforward.0.weight'], p[pre+'.feedforward.0.bias'])), p[pre+'.feedforward.3.weight'], p[pre+'.feedforward.3.bias'])) for o in O]
    base = [lin(v, p['question_projection.weight']) for v in qv]
    gp = lin(g, p['global_projection.weight'])
    X = []
    for qi, q in enumerate(questions):
        R = [O[j] for j in range(len(O)) if owner[j] == qi]
        a = softmax([sum(x*y for x, y in zip(r, base[qi]))/math.sqrt(E) for r in R])
        s = [sum(a[j]*R[j][k] for j in range(len(R))) for k in range(E)]
        x = add(add(add(base[qi], ln(s, p['option_summary_norm.weight'], p['option_summary_norm.bias'])), gp), p['type_embedding.weight'][q['question_type']])
        X.append(x)
    for i in range(cfg['layers']):
        pre = 'layers.%d' % i
        Xs = [ln(x, p[pre+'.norm1.weight'], p[pre+'.norm1.bias']) for x in X]
        X = [add(x, a) for x, a in zip(X, mha(Xs, Xs, p, pre+'.self_attn', nh))]
        X = [add(x, a) for x, a in zip(X, mha([ln(x, p[pre+'.norm2.weight'], p[pre+'.norm2.bias']) for x in X], M, p, pre+'.multihead_attn', nh))]
        X = [add(x, lin(gelu(lin(ln(x, p[pre+'.norm3.weight'], p[pre+'.norm3.bias']), p[pre+'.linear1.weight'], p[pre+'.linear1.bias'])), p[pre+'.linear2.weight'], p[pre+'.linear2.bias'])) for x in X]
    FZ = [ln(x, p['field_norm.weight'], p['field_norm.bias']) for x in X]
    ps = math.exp(min(p['prior_logit_scale'], float(struct.unpack('<f', struct.pack('<f', math.log(100.0)))[0])))
    js = math.exp(min(p['joint_logit_scale'], float(struct.unpack('<f', struct.pack('<f', math.log(100.0)))[0])))
    gate = 1/(1+math.exp(-p['residual_gate']))
    logits = []
    for qi, q in enumerate(questions):
        f = FZ[qi]; anchor = normalize(add(qv[qi], g)); row = []
        for j in [j for j in range(len(O)) if owner[j] == qi]:
            prior = ps * sum(a*b for a, b in zip(normalize(lex[j]), anchor))
            on = ln(O[j], p['option_norm.weight'], p['option_norm.bias'])
            nf = math.sqrt(max(sum(a*a for a in f), 1e-16)); no = math.sqrt(max(sum(a*a for a in on), 1e-16))
            cos = sum((a/nf)*(b/no) for a, b in zip(f, on))
            feat = f + on + [a*b for a, b in zip(f, on)] + [abs(a-b) for a, b in zip(f, on)]
            res = lin(gelu(lin(feat, p['residual_scorer.0.weight'], p['residual_scorer.0.bias'])), p['residual_scorer.3.weight'], p['residual_scorer.3.bias'])[0]
            row.append(prior + gate*(js*cos + res))
        logits.append(row)
    return logits


def load_dir(src):
    p, hdr = read_st(os.path.join(src, 'joint_head_f32.safetensors'))
    cfg = json.load(open(os.path.join(src, 'joint_head_config.json'))); H = cfg['hidden_size']
    Wb = open(os.path.join(src, 'lexical_W.f32'), 'rb').read()
    Wflat = struct.unpack('<%df' % (len(Wb)//4), Wb)
    return p, hdr, cfg, [Wflat[i*H:(i+1)*H] for i in range(len(Wflat)//H)]

def records(src):
    for rec in sorted(d for d in os.listdir(src) if d.startswith('rec')):
        r = json.load(open(os.path.join(src, rec, 'record.json')))
        hb = open(os.path.join(src, rec, 'hidden.f32'), 'rb').read(); hf = struct.unpack('<%df' % (len(hb)//4), hb)
        H = r['hidden_size']
        yield rec, r, [hf[i*H:(i+1)*H] for i in range(r['T'])]

def main():
    cmd, src = sys.argv[1], sys.argv[2]
    p, hdr, cfg, W = load_dir(src)
    if cmd == 'check':
        for rec, r, hidden in records(src):
            lg = forward(p, cfg, hidden, r['input_ids'], W, r['questions'], lex_f32=False)
            print(rec, 'max |ref64 - logits_f64| =', max(abs(a-b) for x, y in zip(lg, r['logits_f64']) for a, b in zip(x, y)))
        return
    dst = sys.argv[3]
    scal = {'prior_logit_scale': 5.25, 'joint_logit_scale': 4.875, 'residual_gate': -0.75}
    b = open(os.path.join(src, 'joint_head_f32.safetensors'), 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; data = b[8+n:]
    tensors = []
    for k, v in sorted(hdr.items()):
        if k == '__metadata__': continue
        s, e = v['data_offsets']; flat = list(struct.unpack('<%df' % ((e-s)//4), data[s:e]))
        if k in scal: flat = [scal[k]]; p[k] = f32(scal[k])
        tensors.append((k, v['shape'], flat))
    os.makedirs(dst, exist_ok=True)
    # Both weight files hold the same f32 values, so both variants compare with the same logits.
    write_st(os.path.join(dst, 'joint_head_f32.safetensors'), tensors)
    write_st(os.path.join(dst, 'joint_head_bf16.safetensors'), tensors)
    for f in ['joint_head_config.json', 'lexical_W.f32']: shutil.copy(os.path.join(src, f), dst)
    for rec, r, hidden in records(src):
        lg = forward(p, cfg, hidden, r['input_ids'], W, r['questions'])
        os.makedirs(os.path.join(dst, rec), exist_ok=True)
        shutil.copy(os.path.join(src, rec, 'hidden.f32'), os.path.join(dst, rec))
        r['logits_f32'] = r['logits_f64'] = r['logits_bf16weights_f32math'] = lg
        json.dump(r, open(os.path.join(dst, rec, 'record.json'), 'w'))
        print(rec, 'max |logit| =', max(abs(x) for row in lg for x in row))

if __name__ == '__main__':
    main()
