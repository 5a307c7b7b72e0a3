/**
 * edgebert demo: type a query, embed it on the device with the bundled student (shared core in src/core), rank the
 * bundled notes by cosine against their embeddings, show the top hits, scores and timing. The runtime is a setting
 * (the button at the bottom): TF.js on rn-webgl or cpu (assets/model), ONNX Runtime (onnxruntime-react-native,
 * assets/model-onnx), LiteRT (react-native-fast-tflite, assets/model-tflite) or ExecuTorch (react-native-executorch,
 * assets/model-et); the last three need a development build.
 * Notes whose precomputed embeddings come from another export than the runtime's (ONNX, TFLite, ExecuTorch) are
 * embedded on the device at load.
 */
import '@tensorflow/tfjs-react-native'; // registers the React Native platform and the rn-webgl backend
import * as tf from '@tensorflow/tfjs-core';
import '@tensorflow/tfjs-backend-cpu';
import { StatusBar } from 'expo-status-bar';
import { useCallback, useEffect, useRef, useState } from 'react';
import {
  ActivityIndicator,
  FlatList,
  Pressable,
  SafeAreaView,
  StyleSheet,
  Text,
  TextInput,
  View,
} from 'react-native';

import { bundledModelFiles, noteEmbeddings, notes } from './src/mobile/bundledModel';
import { bundledOnnxFiles, ONNX_RN_RUNTIME_NAME } from './src/mobile/bundledOnnx';
import { bundledTfliteFiles, TFLITE_RN_RUNTIME_NAME } from './src/mobile/bundledTflite';
import { bundledExecutorchFiles, EXECUTORCH_RN_RUNTIME_NAME } from './src/mobile/bundledExecutorch';
import { Embedder, type ModelFiles } from './src/core/model';
import { embedNotes, NoteIndex, type SearchResult } from './src/core/search';

/** The runtime setting: TF.js on one of its React Native backends, ONNX Runtime, LiteRT or ExecuTorch. */
type Runtime = 'rn-webgl' | 'cpu' | 'onnx' | 'tflite' | 'executorch';
const RUNTIMES: Runtime[] = ['rn-webgl', 'cpu', 'onnx', 'tflite', 'executorch'];
const TOP_K = 5;

async function filesFor(runtime: Runtime): Promise<{ files: ModelFiles; name: string }> {
  if (runtime === 'onnx') return { files: await bundledOnnxFiles(), name: ONNX_RN_RUNTIME_NAME };
  if (runtime === 'tflite') return { files: await bundledTfliteFiles(), name: TFLITE_RN_RUNTIME_NAME };
  if (runtime === 'executorch') return { files: await bundledExecutorchFiles(), name: EXECUTORCH_RN_RUNTIME_NAME };
  await tf.ready();
  if (!(await tf.setBackend(runtime))) throw new Error(`the ${runtime} backend is not available on this device`);
  await tf.ready();
  return { files: bundledModelFiles(), name: `TF.js ${tf.getBackend()}` };
}

async function loadIndex(runtime: Runtime): Promise<{ index: NoteIndex; runtime: string; loadMs: number }> {
  const start = performance.now();
  const { files, name } = await filesFor(runtime);
  const embedder = await Embedder.load(files);
  await embedder.embed(['warm-up']); // first execute compiles kernels / uploads weights
  // The precomputed embeddings are the TF.js export's; another export's notes are embedded here, once.
  const embeddings = NoteIndex.mismatch(embedder, noteEmbeddings) ? await embedNotes(embedder, notes) : noteEmbeddings;
  return { index: new NoteIndex(embedder, notes, embeddings), runtime: name, loadMs: performance.now() - start };
}

function nextRuntime(runtime: Runtime): Runtime {
  return RUNTIMES[(RUNTIMES.indexOf(runtime) + 1) % RUNTIMES.length];
}

export default function App() {
  const [runtime, setRuntime] = useState<Runtime>('rn-webgl');
  const [status, setStatus] = useState('Loading the model…');
  const [busy, setBusy] = useState(true);
  const [query, setQuery] = useState('');
  const [result, setResult] = useState<SearchResult | null>(null);
  const index = useRef<NoteIndex | null>(null);

  useEffect(() => {
    let cancelled = false;
    setBusy(true);
    setStatus(`Loading the model on ${runtime}…`);
    index.current?.embedder.dispose();
    index.current = null;
    loadIndex(runtime)
      .then((loaded) => {
        if (cancelled) return loaded.index.embedder.dispose();
        index.current = loaded.index;
        const m = loaded.index.embedder.manifest;
        setStatus(`${m.name} (${m.target} ${m.quantization}) on ${loaded.runtime}, ready in ${(loaded.loadMs / 1000).toFixed(1)} s`);
      })
      .catch((err: unknown) => setStatus(`Error: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => !cancelled && setBusy(false));
    return () => {
      cancelled = true;
    };
  }, [runtime]);

  const search = useCallback(async () => {
    const q = query.trim();
    if (!q || !index.current) return;
    setBusy(true);
    try {
      setResult(await index.current.search(q, TOP_K));
    } catch (err) {
      setStatus(`Error: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      setBusy(false);
    }
  }, [query]);

  return (
    <SafeAreaView style={styles.screen}>
      <StatusBar style="auto" />
      <Text style={styles.heading}>Search your notes</Text>
      <View style={styles.row}>
        <TextInput
          style={styles.input}
          value={query}
          onChangeText={setQuery}
          onSubmitEditing={search}
          placeholder="e.g. how do I fix a flat tyre?"
          returnKeyType="search"
          autoCorrect={false}
        />
        <Pressable style={[styles.button, busy && styles.disabled]} onPress={search} disabled={busy}>
          <Text style={styles.buttonText}>Search</Text>
        </Pressable>
      </View>
      <View style={styles.row}>
        {busy ? <ActivityIndicator /> : null}
        <Text style={styles.status}>{status}</Text>
      </View>
      {result ? (
        <Text style={styles.timing}>
          query embedded on device in {result.embedMs.toFixed(0)} ms, {notes.length} notes ranked in{' '}
          {result.rankMs.toFixed(1)} ms
        </Text>
      ) : null}
      <FlatList
        data={result?.hits ?? []}
        keyExtractor={(hit) => hit.note.id}
        renderItem={({ item }) => (
          <View style={styles.hit}>
            <Text style={styles.title}>
              <Text style={styles.score}>{item.score.toFixed(3)} </Text>
              {item.note.title}
            </Text>
            <Text style={styles.text}>{item.note.text}</Text>
          </View>
        )}
      />
      <Pressable onPress={() => setRuntime(nextRuntime(runtime))} disabled={busy} style={styles.switch}>
        <Text style={styles.switchText}>Runtime: {runtime} (tap to use {nextRuntime(runtime)})</Text>
      </Pressable>
    </SafeAreaView>
  );
}

const styles = StyleSheet.create({
  screen: { flex: 1, padding: 16, backgroundColor: '#fff' },
  heading: { fontSize: 24, fontWeight: '700', marginVertical: 12 },
  row: { flexDirection: 'row', alignItems: 'center', gap: 8, marginBottom: 8 },
  input: { flex: 1, borderWidth: 1, borderColor: '#ccc', borderRadius: 6, padding: 10, fontSize: 16 },
  button: { backgroundColor: '#0a6', borderRadius: 6, paddingVertical: 10, paddingHorizontal: 16 },
  disabled: { opacity: 0.5 },
  buttonText: { color: '#fff', fontWeight: '600' },
  status: { color: '#666', flexShrink: 1 },
  timing: { color: '#333', marginBottom: 8 },
  hit: { paddingVertical: 8, borderBottomWidth: StyleSheet.hairlineWidth, borderColor: '#ddd' },
  title: { fontSize: 16, fontWeight: '600' },
  score: { color: '#0a6', fontVariant: ['tabular-nums'] },
  text: { color: '#555', marginTop: 2 },
  switch: { paddingVertical: 8 },
  switchText: { color: '#06c', textAlign: 'center' },
});
