/**
 * edgebert demo: type a query, embed it on the device with the bundled TF.js export (shared core in src/core),
 * rank the bundled notes by cosine against their precomputed embeddings, show the top hits, scores and timing.
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
import { Embedder } from './src/core/model';
import { NoteIndex, type SearchResult } from './src/core/search';

type Backend = 'rn-webgl' | 'cpu';
const TOP_K = 5;

async function loadIndex(backend: Backend): Promise<{ index: NoteIndex; backend: string; loadMs: number }> {
  const start = performance.now();
  await tf.ready();
  if (!(await tf.setBackend(backend))) throw new Error(`the ${backend} backend is not available on this device`);
  await tf.ready();
  const embedder = await Embedder.load(bundledModelFiles());
  const mismatch = NoteIndex.mismatch(embedder, noteEmbeddings);
  if (mismatch) throw new Error(`${mismatch}: run scripts/prepare.sh`);
  await embedder.embed(['warm-up']); // first execute compiles kernels / uploads weights
  return { index: new NoteIndex(embedder, notes, noteEmbeddings), backend: tf.getBackend(), loadMs: performance.now() - start };
}

export default function App() {
  const [backend, setBackend] = useState<Backend>('rn-webgl');
  const [status, setStatus] = useState('Loading the model…');
  const [busy, setBusy] = useState(true);
  const [query, setQuery] = useState('');
  const [result, setResult] = useState<SearchResult | null>(null);
  const index = useRef<NoteIndex | null>(null);

  useEffect(() => {
    let cancelled = false;
    setBusy(true);
    setStatus(`Loading the model on ${backend}…`);
    index.current?.embedder.dispose();
    index.current = null;
    loadIndex(backend)
      .then((loaded) => {
        if (cancelled) return loaded.index.embedder.dispose();
        index.current = loaded.index;
        const m = loaded.index.embedder.manifest;
        setStatus(`${m.name} (${m.quantization}) on ${loaded.backend}, ready in ${(loaded.loadMs / 1000).toFixed(1)} s`);
      })
      .catch((err: unknown) => setStatus(`Error: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => !cancelled && setBusy(false));
    return () => {
      cancelled = true;
    };
  }, [backend]);

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
      <Pressable
        onPress={() => setBackend(backend === 'rn-webgl' ? 'cpu' : 'rn-webgl')}
        disabled={busy}
        style={styles.switch}
      >
        <Text style={styles.switchText}>Backend: {backend} (tap to use {backend === 'rn-webgl' ? 'cpu' : 'rn-webgl'})</Text>
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
