"""Session 14 probe (a record): the int8 ONNX file of the small preset scored one sentence a call and in length-sorted batches of 32."""
import csv, os
os.environ["USE_TF"]="0"
import numpy as np, onnxruntime as ort
from scipy.stats import spearmanr
from transformers import AutoTokenizer
A="/work/artifacts/s14/small.work/export/student-onnx-int8"
tok=AutoTokenizer.from_pretrained(A)
rows=[r for r in csv.reader(open("/work/shared/data/stsb/dev.csv")) if len(r)>=3]
try: float(rows[0][2])
except ValueError: rows=rows[1:]
sents=sorted({r[0] for r in rows}|{r[1] for r in rows})
so=ort.SessionOptions(); so.intra_op_num_threads=1
s=ort.InferenceSession(A+"/model.onnx", so, providers=["CPUExecutionProvider"])
names=[i.name for i in s.get_inputs()]
lens=[len(x) for x in tok(sents,truncation=True,max_length=128)["input_ids"]]
order=np.argsort(lens,kind="stable")
emb={}
for b in (1,32):
  out={}
  for st in range(0,len(order),b):
    chunk=[sents[i] for i in order[st:st+b]]
    enc=tok(chunk,return_tensors="np",padding=True,truncation=True,max_length=128)
    feeds={n:enc[n].astype(np.int64) for n in names if n in enc}
    v=s.run(["sentence_embedding"],feeds)[0]
    for t,row in zip(chunk,v): out[t]=row
  c=lambda a,b_: float(a@b_/np.linalg.norm(a)/np.linalg.norm(b_))
  rho=spearmanr([c(out[r[0]],out[r[1]]) for r in rows],[float(r[2]) for r in rows]).correlation
  print(b, round(rho,4), f"{rho/0.8672:.2%}")
